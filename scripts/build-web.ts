/**
 * Bundles the browser UI (src/web) with esbuild into dist/web: index.html plus content-hashed assets, so
 * the daemon can serve assets as immutable and index.html as no-cache. `npm run build` runs it; the
 * browser tests call buildWebUi() once per process. Every file is written to a temporary name and
 * renamed, so concurrent builds (parallel test processes) never leave a half-written file.
 */
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));

function writeAtomic(file: string, body: string | Uint8Array): void {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(tmp, body);
  renameSync(tmp, file);
}

export async function buildWebUi(outDir = join(REPO, 'dist/web')): Promise<string> {
  const assets = join(outDir, 'assets');
  mkdirSync(assets, { recursive: true });
  const result = await build({
    entryPoints: { app: join(REPO, 'src/web/main.ts'), style: join(REPO, 'src/web/style.css') },
    bundle: true,
    format: 'esm',
    target: ['chrome110', 'firefox115', 'safari16'],
    minify: true,
    sourcemap: false,
    entryNames: '[name]-[hash]',
    outdir: assets,
    write: false,
    metafile: true,
    logLevel: 'silent',
    tsconfig: join(REPO, 'src/web/tsconfig.json'),
  });
  const names: Record<string, string> = {};
  for (const f of result.outputFiles) {
    const name = basename(f.path);
    writeAtomic(join(assets, name), f.contents);
    names[name.endsWith('.css') ? 'css' : 'js'] = name;
  }
  const html = readFileSync(join(REPO, 'src/web/index.html'), 'utf8')
    .replace('{{APP_JS}}', `/assets/${names.js}`)
    .replace('{{APP_CSS}}', `/assets/${names.css}`);
  writeAtomic(join(outDir, 'index.html'), html);
  // Old hashed files from earlier builds are dropped (only when they are not what index.html names).
  const keep = new Set(Object.values(names));
  for (const f of readdirSync(assets))
    if (!keep.has(f) && !f.endsWith('.tmp')) rmSync(join(assets, f), { force: true });
  return outDir;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = await buildWebUi(process.argv[2] ? resolve(process.argv[2]) : undefined);
  process.stdout.write(`web UI built into ${dir}\n`);
}
