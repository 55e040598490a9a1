import test from 'ava';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemonProcess.js';
import { killLoop } from '../helpers/killLoop.js';

// Reduced in CI; VIGIL_SIGKILL_ROUNDS=30 by hand (bench/soak.ts reports the figures).
const ROUNDS = Number(process.env.VIGIL_SIGKILL_ROUNDS ?? 3);

let d: DaemonProcess | undefined;
test.after.always(async () => {
  await d?.stop();
});

test(`SIGKILL during writes, ${ROUNDS} rounds: no acknowledged write is lost and the daemon restarts every time`, async (t) => {
  d = await startDaemonProcess({ logLevel: 'info' });
  const r = await killLoop(d, ROUNDS);
  t.log(
    JSON.stringify({
      rounds: ROUNDS,
      acknowledged: r.acknowledged,
      lost: r.lost.length,
      failed_during_kill: r.failedDuringKill,
    }),
  );
  t.true(r.acknowledged > ROUNDS);
  t.deepEqual(r.lost, []);
});
