/**
 * Where a model file can come from, in the order the installer tries them: the operator's mirror
 * (a flat directory or base URL), then the catalog's sources. Each origin writes candidate bytes to a
 * temp file; verifying them is the installer's job.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Errors } from '../contract/errors.js';
import { npmTarballUrl, type FileSpec, type Source } from './catalog.js';
import { extractTarMember, extractZipMember } from './extract.js';
import { removeQuietly, streamToFile, tempPathFor, TooLargeError, type Digest } from './fsutil.js';
import { downloadToFile, type HttpOptions } from './http.js';
import type { ProgressFactory } from './progress.js';
import { displayUrl, SourceError } from './source-error.js';

/** Caps: archives are whole model packs; one member is one model. */
export const MAX_ARCHIVE_BYTES = 400 * 1024 * 1024;
export const MAX_MEMBER_BYTES = 256 * 1024 * 1024;

export type Mirror = { type: 'dir'; dir: string } | { type: 'url'; base: string };

export interface FileOrigin {
  /** Printable: no credentials, no query string. */
  description: string;
  /** Writes the candidate bytes for the file to `dest`. */
  fetchTo(dest: string): Promise<Digest>;
}

export interface OriginContext {
  progress: ProgressFactory;
  http?: HttpOptions;
  env: NodeJS.ProcessEnv;
  containers: ContainerCache;
}

/** `--from` accepts an http(s) base URL, a file: URL, or a directory path. */
export async function resolveMirror(value: string): Promise<Mirror> {
  if (/^https?:\/\//i.test(value)) return { type: 'url', base: value.replace(/\/+$/, '') };
  const dir = value.startsWith('file:') ? fileURLToPath(value) : resolve(value);
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw Errors.modelSourceUnavailable(
      `mirror ${dir} is not a directory (expected a folder or an http(s) URL)`,
      { mirror: dir },
      400,
    );
  }
  return { type: 'dir', dir };
}

export function originsFor(name: string, spec: FileSpec, mirror: Mirror | undefined, ctx: OriginContext): FileOrigin[] {
  const origins: FileOrigin[] = [];
  if (mirror?.type === 'dir') origins.push(mirrorDirOrigin(mirror.dir, name, spec));
  if (mirror?.type === 'url')
    origins.push(urlOrigin(`${mirror.base}/${encodeURIComponent(name)}`, name, spec, ctx, 'mirror'));
  for (const source of spec.sources) origins.push(sourceOrigin(source, name, spec, ctx));
  return origins;
}

/** How a catalog source is shown to users (`vigil models info`, failure details). */
export function describeSource(source: Source, env: NodeJS.ProcessEnv): string {
  switch (source.type) {
    case 'url':
      return `url ${displayUrl(source.url)}`;
    case 'archive':
      return `archive ${displayUrl(source.url)} member ${source.member}`;
    case 'npm':
      return `npm ${source.package}@${source.version} (${displayUrl(npmTarballUrl(source, env))}) path ${source.path}`;
  }
}

function sourceOrigin(source: Source, name: string, spec: FileSpec, ctx: OriginContext): FileOrigin {
  switch (source.type) {
    case 'url':
      return urlOrigin(source.url, name, spec, ctx, 'url');
    case 'archive':
      return {
        description: describeSource(source, ctx.env),
        fetchTo: async (dest) => {
          const zip = await ctx.containers.get(source.url, source.archive_sha256);
          return extractZipMember(zip, source.member, dest, MAX_MEMBER_BYTES);
        },
      };
    case 'npm':
      return {
        description: describeSource(source, ctx.env),
        fetchTo: async (dest) => {
          const tgz = await ctx.containers.get(npmTarballUrl(source, ctx.env));
          return extractTarMember(tgz, source.path, dest, MAX_MEMBER_BYTES);
        },
      };
  }
}

function mirrorDirOrigin(dir: string, name: string, spec: FileSpec): FileOrigin {
  const path = join(dir, name);
  return {
    description: `mirror ${path}`,
    fetchTo: async (dest) => {
      try {
        return await streamToFile(createReadStream(path), dest, spec.size);
      } catch (err) {
        throw localCopyError(err, spec);
      }
    },
  };
}

function localCopyError(err: unknown, spec: FileSpec): SourceError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new SourceError('unavailable', 'not found in the mirror');
  if (err instanceof TooLargeError) {
    return new SourceError('mismatch', `larger than the catalog size (${spec.size} bytes)`);
  }
  return new SourceError('unavailable', `cannot read (${code ?? (err as Error).message})`);
}

function urlOrigin(url: string, name: string, spec: FileSpec, ctx: OriginContext, kind: 'mirror' | 'url'): FileOrigin {
  return {
    description: `${kind} ${displayUrl(url)}`,
    fetchTo: async (dest) => {
      try {
        // The catalog size is the cap: more bytes than that can only be the wrong file.
        return await downloadToFile({
          url,
          dest,
          limit: spec.size,
          label: name,
          progress: ctx.progress,
          http: ctx.http,
        });
      } catch (err) {
        if (err instanceof SourceError && err.kind === 'too_large') {
          throw new SourceError('mismatch', `larger than the catalog size (${spec.size} bytes)`);
        }
        throw err;
      }
    },
  };
}

/**
 * Archives and tarballs downloaded during one install run, keyed by URL: two files from the same
 * zip download it once. Everything lives as hidden temp files in the pack dir until `clear()`.
 */
export class ContainerCache {
  private readonly downloads = new Map<string, Promise<{ path: string; sha256: string }>>();
  private readonly paths: string[] = [];

  constructor(
    private readonly dir: string,
    private readonly progress: ProgressFactory,
    private readonly http?: HttpOptions,
  ) {}

  /** The local path of the downloaded container; checks `expectedSha256` when the source pins one. */
  async get(url: string, expectedSha256?: string): Promise<string> {
    let download = this.downloads.get(url);
    if (!download) {
      download = this.download(url);
      // A failure is cached too: the same URL would fail the same way for the next file.
      download.catch(() => undefined);
      this.downloads.set(url, download);
    }
    const { path, sha256 } = await download;
    if (expectedSha256 && sha256 !== expectedSha256) {
      throw new SourceError('mismatch', `archive sha256 is ${sha256}, expected ${expectedSha256}`);
    }
    return path;
  }

  private async download(url: string): Promise<{ path: string; sha256: string }> {
    const urlHash = createHash('sha256').update(url).digest('hex').slice(0, 12);
    const path = tempPathFor(join(this.dir, `download-${urlHash}`), 'download');
    this.paths.push(path);
    const label = basename(new URL(url).pathname) || 'archive';
    const digest = await downloadToFile({
      url,
      dest: path,
      limit: MAX_ARCHIVE_BYTES,
      label,
      progress: this.progress,
      http: this.http,
    });
    return { path, sha256: digest.sha256 };
  }

  async clear(): Promise<void> {
    await Promise.all(this.paths.map(removeQuietly));
    this.paths.length = 0;
    this.downloads.clear();
  }
}
