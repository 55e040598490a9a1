import { Worker } from 'node:worker_threads';

/**
 * Starts one of this folder's worker entry modules. Built code runs `<name>.js` directly. From source
 * (tests, dev under tsx) Node 20 does not apply loader hooks to a worker's entry module, so a small
 * bootstrap registers tsx first and then imports `<name>.ts`.
 */
export function startWorkerThread(name: 'worker' | 'livenessPeer', workerData: unknown): Worker {
  if (import.meta.url.endsWith('.js')) return new Worker(new URL(`./${name}.js`, import.meta.url), { workerData });
  const entry = new URL(`./${name}.ts`, import.meta.url).href;
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}
