import test from 'ava';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';

test('a worker started from source loads from any working directory (bin/vigil serve outside the checkout)', (t) => {
  const dir = tempDir(t, 'vigil-worker-cwd-');
  writeFileSync(
    join(dir, 'probe.ts'),
    "import { parentPort, workerData } from 'node:worker_threads';\nconst n: number = workerData;\nparentPort!.postMessage(n + 1);\n",
  );
  const main = pathToFileURL(join(dir, 'main.ts')).href;
  const script = `
    const { startModuleWorker } = await import(${JSON.stringify(pathToFileURL(join(REPO, 'src/system/workerThread.ts')).href)});
    const w = startModuleWorker(${JSON.stringify(main)}, 'probe', 41);
    w.once('message', (m) => { console.log('worker says', m); w.terminate(); });
    w.once('error', (e) => { console.log('worker failed:', e.message); process.exitCode = 1; });`;
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      pathToFileURL(join(REPO, 'node_modules/tsx/dist/loader.mjs')).href,
      '--input-type=module',
      '-e',
      script,
    ],
    { cwd: dir, encoding: 'utf8', timeout: 60_000 },
  );
  t.is(r.stdout.trim(), 'worker says 42', r.stdout + r.stderr);
});
