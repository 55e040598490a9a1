import { Worker } from 'node:worker_threads';

/**
 * Starts the worker entry module `<name>` next to `moduleUrl` (pass `import.meta.url`). Built code runs
 * `<name>.js` directly. From source (tests, dev under tsx) Node 20 does not apply loader hooks to a
 * worker's entry module, so a small bootstrap registers tsx first and then imports `<name>.ts` (from any
 * working directory: `bin/vigil serve` runs the source outside the checkout).
 */
export function startModuleWorker(moduleUrl: string, name: string, workerData: unknown): Worker {
  if (moduleUrl.endsWith('.js')) return new Worker(new URL(`./${name}.js`, moduleUrl), { workerData });
  const entry = new URL(`./${name}.ts`, moduleUrl).href;
  // tsx as this checkout resolves it: an eval'd worker resolves bare names from the working directory.
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}
