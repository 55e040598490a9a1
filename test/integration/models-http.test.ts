/**
 * The installer against a real HTTP server on 127.0.0.1: mirror base URLs, zip archives, npm
 * tarballs, retries, and failures. Every test gets its own server so request counts are exact.
 */
import test, { type ExecutionContext } from 'ava';
import { crc32, Sink } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { Readable } from 'node:stream';
import * as tar from 'tar';
import { ApiError } from '../../src/contract/errors.js';
import { parseCatalog, type Catalog, type Source } from '../../src/models/catalog.js';
import { installPack, type InstallOptions } from '../../src/models/installer.js';

// ---------------------------------------------------------------- fixtures

interface Blob {
  bytes: Buffer;
  sha256: string;
}

function blob(size = 48 * 1024): Blob {
  const bytes = randomBytes(size);
  return { bytes, sha256: sha256(bytes) };
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

interface ZipMember {
  name: string;
  data: Buffer;
  /** Unix mode stored in the external attributes; 0o120777 makes a symlink. */
  mode?: number;
  /** Deflate (method 8) instead of stored. */
  deflate?: boolean;
}

/** A minimal zip writer (stored or deflated members), so the test needs no zip binary. */
function buildZip(members: ZipMember[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const m of members) {
    const name = Buffer.from(m.name);
    const crc = crc32(m.data);
    const body = m.deflate ? deflateRawSync(m.data) : m.data;
    const method = m.deflate ? 8 : 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(0x21, 12); // 1980-01-01
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(m.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by unix
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(method, 10);
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(m.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(((m.mode ?? 0o100644) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(members.length, 8);
  end.writeUInt16LE(members.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/** An npm-style tarball: everything under `package/`. */
async function buildTgz(work: string, files: Record<string, Buffer>): Promise<Buffer> {
  const root = join(work, 'tgz-src');
  for (const [path, data] of Object.entries(files)) {
    await mkdir(join(root, 'package', path, '..'), { recursive: true });
    await writeFile(join(root, 'package', path), data);
  }
  const out = join(work, 'pkg.tgz');
  await tar.c({ gzip: true, cwd: root, file: out, portable: true }, ['package']);
  return readFile(out);
}

// ---------------------------------------------------------------- server

type Handler = (req: IncomingMessage, res: ServerResponse, hit: number) => void;

interface TestServer {
  base: string;
  /** Every request path, in order. */
  hits: string[];
  count(path: string): number;
}

async function startServer(t: ExecutionContext, routes: Record<string, Handler>): Promise<TestServer> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.push(path);
    const handler = routes[path];
    if (!handler) {
      res.writeHead(404).end('not found');
      return;
    }
    handler(req, res, hits.filter((p) => p === path).length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, hits, count: (path) => hits.filter((p) => p === path).length };
}

const send =
  (data: Buffer): Handler =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': data.length }).end(data);
  };

// ---------------------------------------------------------------- catalog + install helpers

interface FileDef {
  blob: Blob;
  sources: Source[];
}

/** A one-licence catalog; each pack is [detector file, recognizer file]. */
function makeCatalog(files: Record<string, FileDef>, packs: Record<string, [string, string]>): Catalog {
  return parseCatalog({
    manifest_version: 1,
    default_pack: Object.keys(packs)[0],
    licenses: {
      'test-lic': {
        name: 'Test Licence',
        url: 'https://example.invalid/licence',
        commercial_use: true,
        notice: 'For tests only.',
      },
    },
    files: Object.fromEntries(
      Object.entries(files).map(([name, f]) => [
        name,
        { sha256: f.blob.sha256, size: f.blob.bytes.length, license: 'test-lic', sources: f.sources },
      ]),
    ),
    packs: Object.fromEntries(
      Object.entries(packs).map(([id, [det, rec]]) => [
        id,
        {
          description: `test pack ${id}`,
          detector: {
            file: det,
            kind: 'scrfd',
            channel_order: 'rgb',
            mean: 127.5,
            std: 128,
            preprocessing_version: 't-1',
          },
          recognizer: {
            file: rec,
            kind: 'arcface',
            input_size: [112, 112],
            channel_order: 'bgr',
            mean: 127.5,
            std: 128,
            embedding_dimension: 512,
            preprocessing_version: 't-1',
          },
        },
      ]),
    ),
  });
}

function install(modelsDir: string, catalog: Catalog, packId: string, extra: Partial<InstallOptions> = {}) {
  const io = { stdout: new Sink(), stderr: new Sink(), stdin: Object.assign(Readable.from([]), { isTTY: false }) };
  return installPack({
    packId,
    modelsDir,
    catalog,
    acceptLicense: true,
    env: {},
    io,
    // Fast backoff so retry tests stay quick.
    http: { baseDelayMs: 5, maxDelayMs: 50 },
    ...extra,
  });
}

async function rejectsWith(t: ExecutionContext, promise: Promise<unknown>, code: string): Promise<ApiError> {
  const err = await t.throwsAsync(promise);
  if (!(err instanceof ApiError)) throw err;
  t.is(err.code, code, err.message);
  return err;
}

const attemptsOf = (err: ApiError) => err.details.attempts as { source: string; kind: string; error: string }[];

// ---------------------------------------------------------------- tests

test('mirror base URL is tried first; a mirror miss falls back to the catalog source', async (t) => {
  const a = blob();
  const b = blob();
  const server = await startServer(t, {
    '/mirror/a.onnx': send(a.bytes),
    '/real/a.onnx': send(a.bytes),
    '/real/b.onnx': send(b.bytes),
  });
  const catalog = makeCatalog(
    {
      'a.onnx': { blob: a, sources: [{ type: 'url', url: `${server.base}/real/a.onnx` }] },
      'b.onnx': { blob: b, sources: [{ type: 'url', url: `${server.base}/real/b.onnx` }] },
    },
    { p: ['a.onnx', 'b.onnx'] },
  );
  const modelsDir = tempDir(t, 'vigil-models-http-');
  const stderr = new Sink();
  const io = { stdout: new Sink(), stderr, stdin: Object.assign(Readable.from([]), { isTTY: false }) };
  const result = await install(modelsDir, catalog, 'p', { mirror: `${server.base}/mirror/`, io });
  t.regex(stderr.text, /^b\.onnx: 100% /m, 'non-TTY progress is plain lines');
  t.regex(stderr.text, /b\.onnx: mirror .*: HTTP 404/, 'each failed source is reported as it happens');
  t.deepEqual(
    result.files.map((f) => [f.name, f.status, f.source]),
    [
      ['a.onnx', 'downloaded', `mirror ${server.base}/mirror/a.onnx`],
      ['b.onnx', 'downloaded', `url ${server.base}/real/b.onnx`],
    ],
  );
  t.deepEqual(server.hits, ['/mirror/a.onnx', '/mirror/b.onnx', '/real/b.onnx']);
  t.deepEqual(await readFile(join(modelsDir, 'p', 'b.onnx')), b.bytes);
});

test('zip archive: both members extracted from one download, archive_sha256 checked, no temp files left', async (t) => {
  const det = blob();
  // Half zeros, so deflate really compresses it.
  const recBytes = Buffer.concat([randomBytes(100), Buffer.alloc(48 * 1024)]);
  const rec = { bytes: recBytes, sha256: sha256(recBytes) };
  const zip = buildZip([
    { name: 'pack/', data: Buffer.alloc(0), mode: 0o040755 },
    { name: 'pack/det.onnx', data: det.bytes },
    { name: 'pack/rec.onnx', data: rec.bytes, deflate: true },
    { name: 'README.txt', data: Buffer.from('hello') },
  ]);
  const server = await startServer(t, { '/dl/pack.zip': send(zip) });
  const url = `${server.base}/dl/pack.zip`;
  const catalog = makeCatalog(
    {
      'det.onnx': {
        blob: det,
        sources: [{ type: 'archive', url, format: 'zip', member: 'det.onnx', archive_sha256: sha256(zip) }],
      },
      'rec.onnx': { blob: rec, sources: [{ type: 'archive', url, format: 'zip', member: 'pack/rec.onnx' }] },
    },
    { z: ['det.onnx', 'rec.onnx'] },
  );
  const modelsDir = tempDir(t, 'vigil-models-http-');
  // Left by an interrupted run (a pid that cannot exist): cleaned up.
  await mkdir(join(modelsDir, 'z'), { recursive: true });
  await writeFile(join(modelsDir, 'z', '.det.onnx.99999999-0badc0de.part'), 'partial');
  const result = await install(modelsDir, catalog, 'z');
  t.deepEqual(
    result.files.map((f) => f.status),
    ['downloaded', 'downloaded'],
  );
  t.is(server.count('/dl/pack.zip'), 1);
  t.deepEqual(await readFile(join(modelsDir, 'z', 'det.onnx')), det.bytes);
  t.deepEqual(await readFile(join(modelsDir, 'z', 'rec.onnx')), rec.bytes);
  t.deepEqual((await readdir(join(modelsDir, 'z'))).sort(), ['det.onnx', 'pack.json', 'rec.onnx']);
});

test('zip archive with the wrong archive_sha256 is rejected and nothing is published', async (t) => {
  const det = blob();
  const zip = buildZip([{ name: 'det.onnx', data: det.bytes }]);
  const server = await startServer(t, { '/dl/pack.zip': send(zip) });
  const catalog = makeCatalog(
    {
      'det.onnx': {
        blob: det,
        sources: [
          {
            type: 'archive',
            url: `${server.base}/dl/pack.zip`,
            format: 'zip',
            member: 'det.onnx',
            archive_sha256: 'a'.repeat(64),
          },
        ],
      },
    },
    { z: ['det.onnx', 'det.onnx'] },
  );
  const modelsDir = tempDir(t, 'vigil-models-http-');
  const err = await rejectsWith(t, install(modelsDir, catalog, 'z'), 'model_checksum_mismatch');
  t.regex(attemptsOf(err)[0]!.error, /archive sha256 is [0-9a-f]{64}, expected a{64}/);
  t.deepEqual(await readdir(join(modelsDir, 'z')), []);
});

test('zip members that are symlinks or ambiguous are refused', async (t) => {
  const det = blob();
  const server = await startServer(t, {
    '/link.zip': send(buildZip([{ name: 'det.onnx', data: Buffer.from('/etc/passwd'), mode: 0o120777 }])),
    '/twice.zip': send(
      buildZip([
        { name: 'a/det.onnx', data: det.bytes },
        { name: 'b/det.onnx', data: det.bytes },
      ]),
    ),
  });
  const catalog = makeCatalog(
    {
      'det.onnx': {
        blob: det,
        sources: [
          { type: 'archive', url: `${server.base}/link.zip`, format: 'zip', member: 'det.onnx' },
          { type: 'archive', url: `${server.base}/twice.zip`, format: 'zip', member: 'det.onnx' },
        ],
      },
    },
    { z: ['det.onnx', 'det.onnx'] },
  );
  const modelsDir = tempDir(t, 'vigil-models-http-');
  const err = await rejectsWith(t, install(modelsDir, catalog, 'z'), 'model_download_failed');
  const [link, twice] = attemptsOf(err);
  t.is(link!.kind, 'bad_archive');
  t.regex(link!.error, /is a symlink/);
  t.regex(twice!.error, /matches 2 entries/);
  t.deepEqual(await readdir(join(modelsDir, 'z')), []);
});

test('npm source: the tarball comes from npm_config_registry and the one path is extracted', async (t) => {
  const rec = blob();
  const det = blob();
  const work = tempDir(t, 'vigil-models-http-');
  const tgz = await buildTgz(work, {
    'package.json': Buffer.from('{"name":"@vigil-test/models","version":"1.2.3"}'),
    'model/rec.onnx': rec.bytes,
    'model/other.onnx': det.bytes,
  });
  const tarballPath = '/registry/@vigil-test/models/-/models-1.2.3.tgz';
  const server = await startServer(t, { [tarballPath]: send(tgz) });
  const npm = { type: 'npm', package: '@vigil-test/models', version: '1.2.3' } as const;
  const catalog = makeCatalog(
    {
      'rec.onnx': { blob: rec, sources: [{ ...npm, path: 'package/model/rec.onnx' }] },
      'det.onnx': { blob: det, sources: [{ ...npm, path: 'package/model/other.onnx' }] },
    },
    { n: ['det.onnx', 'rec.onnx'] },
  );
  const modelsDir = join(work, 'models');
  const result = await install(modelsDir, catalog, 'n', { env: { npm_config_registry: `${server.base}/registry/` } });
  t.deepEqual(
    result.files.map((f) => f.status),
    ['downloaded', 'downloaded'],
  );
  t.true(result.files[1]!.source!.includes(`${server.base}${tarballPath}`));
  t.is(server.count(tarballPath), 1, 'one download serves both files');
  t.deepEqual(await readFile(join(modelsDir, 'n', 'rec.onnx')), rec.bytes);
  t.deepEqual(await readFile(join(modelsDir, 'n', 'det.onnx')), det.bytes);
});

test('npm source: a path that is not in the tarball fails with the reason', async (t) => {
  const rec = blob();
  const work = tempDir(t, 'vigil-models-http-');
  const tgz = await buildTgz(work, { 'model/rec.onnx': rec.bytes });
  const server = await startServer(t, { '/pkg/-/pkg-1.0.0.tgz': send(tgz) });
  const catalog = makeCatalog(
    {
      'rec.onnx': {
        blob: rec,
        sources: [{ type: 'npm', package: 'pkg', version: '1.0.0', path: 'package/model/missing.onnx' }],
      },
    },
    { n: ['rec.onnx', 'rec.onnx'] },
  );
  const err = await rejectsWith(
    t,
    install(join(work, 'models'), catalog, 'n', { env: { npm_config_registry: server.base } }),
    'model_download_failed',
  );
  t.regex(attemptsOf(err)[0]!.error, /package\/model\/missing\.onnx is not in the package tarball/);
});

test('503 then 200 is retried (honouring Retry-After); 404 is not retried', async (t) => {
  const good = blob();
  const gone = blob();
  const server = await startServer(t, {
    '/flaky.onnx': (req, res, hit) => {
      if (hit === 1) res.writeHead(503, { 'retry-after': '0' }).end('busy');
      else send(good.bytes)(req, res, hit);
    },
  });
  const catalog = makeCatalog(
    {
      'flaky.onnx': { blob: good, sources: [{ type: 'url', url: `${server.base}/flaky.onnx` }] },
      'gone.onnx': { blob: gone, sources: [{ type: 'url', url: `${server.base}/gone.onnx` }] },
    },
    { flaky: ['flaky.onnx', 'flaky.onnx'], gone: ['gone.onnx', 'gone.onnx'] },
  );
  const modelsDir = tempDir(t, 'vigil-models-http-');
  const ok = await install(modelsDir, catalog, 'flaky');
  t.is(ok.files[0]!.status, 'downloaded');
  t.is(server.count('/flaky.onnx'), 2);

  const err = await rejectsWith(t, install(modelsDir, catalog, 'gone'), 'model_download_failed');
  t.is(server.count('/gone.onnx'), 1);
  t.deepEqual(attemptsOf(err), [{ source: `url ${server.base}/gone.onnx`, kind: 'unavailable', error: 'HTTP 404' }]);
  t.deepEqual(await readdir(join(modelsDir, 'gone')), []);
});

test('429 waits for Retry-After before the next try', async (t) => {
  const f = blob();
  const server = await startServer(t, {
    '/limited.onnx': (req, res, hit) => {
      if (hit === 1) res.writeHead(429, { 'retry-after': '1' }).end();
      else send(f.bytes)(req, res, hit);
    },
  });
  const catalog = makeCatalog(
    { 'l.onnx': { blob: f, sources: [{ type: 'url', url: `${server.base}/limited.onnx` }] } },
    { l: ['l.onnx', 'l.onnx'] },
  );
  const started = Date.now();
  // maxDelayMs above the server's 1 s so the header, not the 5 ms backoff, sets the wait.
  await install(tempDir(t, 'vigil-models-http-'), catalog, 'l', { http: { baseDelayMs: 5, maxDelayMs: 5_000 } });
  t.true(Date.now() - started >= 950);
  t.is(server.count('/limited.onnx'), 2);
});

test('a stalled body times out and is retried up to maxAttempts', async (t) => {
  const f = blob();
  const server = await startServer(t, {
    '/stall.onnx': (_req, res) => {
      res.writeHead(200, { 'content-length': String(f.bytes.length) });
      res.write(f.bytes.subarray(0, 10));
    },
  });
  const catalog = makeCatalog(
    { 's.onnx': { blob: f, sources: [{ type: 'url', url: `${server.base}/stall.onnx` }] } },
    { s: ['s.onnx', 's.onnx'] },
  );
  const http = { baseDelayMs: 5, maxAttempts: 2, readTimeoutMs: 200 };
  const err = await rejectsWith(
    t,
    install(tempDir(t, 'vigil-models-http-'), catalog, 's', { http }),
    'model_download_failed',
  );
  t.is(attemptsOf(err)[0]!.error, 'stalled within 0.2 s (after 2 attempts)');
  t.is(server.count('/stall.onnx'), 2);
});

test('persistent 5xx gives up after 5 attempts', async (t) => {
  const f = blob();
  const server = await startServer(t, { '/down.onnx': (_req, res) => void res.writeHead(502).end() });
  const catalog = makeCatalog(
    { 'down.onnx': { blob: f, sources: [{ type: 'url', url: `${server.base}/down.onnx` }] } },
    { d: ['down.onnx', 'down.onnx'] },
  );
  const err = await rejectsWith(t, install(tempDir(t, 'vigil-models-http-'), catalog, 'd'), 'model_download_failed');
  t.is(server.count('/down.onnx'), 5);
  t.is(attemptsOf(err)[0]!.error, 'HTTP 502 (after 5 attempts)');
});

test('wrong bytes are rejected by checksum; an existing bad file is kept until a good copy verifies', async (t) => {
  const good = blob();
  const evil = blob(good.bytes.length);
  let serveGood = false;
  const server = await startServer(t, {
    '/m.onnx': (req, res, hit) => send(serveGood ? good.bytes : evil.bytes)(req, res, hit),
  });
  const catalog = makeCatalog(
    { 'm.onnx': { blob: good, sources: [{ type: 'url', url: `${server.base}/m.onnx` }] } },
    { m: ['m.onnx', 'm.onnx'] },
  );
  const modelsDir = tempDir(t, 'vigil-models-http-');
  await mkdir(join(modelsDir, 'm'), { recursive: true });
  const stale = Buffer.from('stale copy');
  await writeFile(join(modelsDir, 'm', 'm.onnx'), stale);

  const err = await rejectsWith(t, install(modelsDir, catalog, 'm'), 'model_checksum_mismatch');
  t.regex(err.message, /m\.onnx/);
  t.deepEqual(await readFile(join(modelsDir, 'm', 'm.onnx')), stale, 'the unverified download was not published');
  t.deepEqual((await readdir(join(modelsDir, 'm'))).sort(), ['m.onnx'], 'no pack.json, no temp files');

  serveGood = true;
  const fixed = await install(modelsDir, catalog, 'm');
  t.is(fixed.files[0]!.status, 'replaced');
  t.deepEqual(await readFile(join(modelsDir, 'm', 'm.onnx')), good.bytes);
});

test('a response larger than the catalog size is cut off and rejected', async (t) => {
  const f = blob(1024);
  const server = await startServer(t, { '/big.onnx': send(randomBytes(64 * 1024)) });
  const catalog = makeCatalog(
    { 'big.onnx': { blob: f, sources: [{ type: 'url', url: `${server.base}/big.onnx` }] } },
    { b: ['big.onnx', 'big.onnx'] },
  );
  const err = await rejectsWith(t, install(tempDir(t, 'vigil-models-http-'), catalog, 'b'), 'model_checksum_mismatch');
  t.regex(attemptsOf(err)[0]!.error, /larger than the catalog size \(1024 bytes\)/);
});

test('an archive whose Content-Length is over the cap is refused without reading it or retrying', async (t) => {
  const f = blob();
  const server = await startServer(t, {
    '/huge.zip': (_req, res) => {
      res.writeHead(200, { 'content-length': String(401 * 1024 * 1024) });
      res.write(Buffer.alloc(1024));
    },
  });
  const catalog = makeCatalog(
    {
      'f.onnx': {
        blob: f,
        sources: [{ type: 'archive', url: `${server.base}/huge.zip`, format: 'zip', member: 'f.onnx' }],
      },
    },
    { f: ['f.onnx', 'f.onnx'] },
  );
  const err = await rejectsWith(t, install(tempDir(t, 'vigil-models-http-'), catalog, 'f'), 'model_download_failed');
  t.is(attemptsOf(err)[0]!.kind, 'too_large');
  t.is(server.count('/huge.zip'), 1);
});

test('licence refusal in a non-TTY happens before any request', async (t) => {
  const f = blob();
  const server = await startServer(t, { '/f.onnx': send(f.bytes) });
  const catalog = makeCatalog(
    { 'f.onnx': { blob: f, sources: [{ type: 'url', url: `${server.base}/f.onnx` }] } },
    { f: ['f.onnx', 'f.onnx'] },
  );
  const modelsDir = tempDir(t, 'vigil-models-http-');
  await rejectsWith(
    t,
    install(modelsDir, catalog, 'f', { acceptLicense: false, mirror: `${server.base}/mirror` }),
    'license_not_accepted',
  );
  t.deepEqual(server.hits, []);
  t.deepEqual(await readdir(modelsDir), []);
});

test('credentials in a mirror URL become Basic auth and never appear in errors', async (t) => {
  const f = blob();
  const server = await startServer(t, {
    '/private/f.onnx': (req, res, hit) => {
      const expected = `Basic ${Buffer.from('user:s3cret').toString('base64')}`;
      if (req.headers.authorization === expected) send(f.bytes)(req, res, hit);
      else res.writeHead(401).end();
    },
  });
  const catalog = makeCatalog(
    { 'f.onnx': { blob: f, sources: [] }, 'g.onnx': { blob: blob(), sources: [] } },
    { f: ['f.onnx', 'f.onnx'], g: ['g.onnx', 'g.onnx'] },
  );
  const modelsDir = tempDir(t, 'vigil-models-http-');
  const mirror = server.base.replace('http://', 'http://user:s3cret@') + '/private';
  const ok = await install(modelsDir, catalog, 'f', { mirror });
  t.is(ok.files[0]!.source, `mirror ${server.base}/private/f.onnx`);

  const err = await rejectsWith(t, install(modelsDir, catalog, 'g', { mirror }), 'model_download_failed');
  t.false(JSON.stringify({ message: err.message, details: err.details }).includes('s3cret'));
});

test('a file with no catalog sources and no mirror is model_source_unavailable', async (t) => {
  const catalog = makeCatalog({ 'f.onnx': { blob: blob(), sources: [] } }, { f: ['f.onnx', 'f.onnx'] });
  await rejectsWith(t, install(tempDir(t, 'vigil-models-http-'), catalog, 'f'), 'model_source_unavailable');
});
