/**
 * Cost of a presented API key in process: a wrong key against a store whose key was verified at start
 * (the daemon's normal case), beside the right key (the anchor, same run), and one scrypt (what a wrong
 * key cost before). Usage: npx tsx bench/auth-cost.ts -> prints JSON
 */

import { join } from 'node:path';
import { ApiKeyStore } from '../src/auth/apiKeyStore.js';
import { openDatabase } from '../src/store/database.js';
import { fileTempDir } from '../test/helpers/tempDir.js';

const KEY = 'bench-key-0123456789abcdef';
const opened = openDatabase(join(fileTempDir('vigil-authbench-'), 'data'));
new ApiKeyStore(opened.db).ensureKey(KEY);
const started = new ApiKeyStore(opened.db);
started.ensureKey(KEY); // as serve does at start: verifies once
const cold = new ApiKeyStore(opened.db); // a store that never saw the key: needs scrypt

async function perCall(fn: (i: number) => Promise<unknown>, n: number, warmup = 200): Promise<number> {
  for (let i = 0; i < warmup; i++) await fn(-1 - i);
  const t = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  return ((performance.now() - t) / n) * 1000;
}
const wrong = await perCall((i) => started.verify(`wrong-key-${i}-0123456789abcdef`), 20_000);
const right = await perCall(() => started.verify(KEY), 20_000);
const scryptOne = await perCall((i) => cold.verify(`another-wrong-${i}-0123456789`), 20, 2);
console.log(
  JSON.stringify(
    {
      wrong_key_us: Math.round(wrong * 10) / 10,
      right_key_us: Math.round(right * 10) / 10,
      scrypt_wrong_key_us_before: Math.round(scryptOne),
      scrypt_runs_on_fast_path: started.scryptVerifications,
    },
    null,
    2,
  ),
);
opened.close();
