import test from 'ava';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { fuzz } from '../helpers/fuzz.js';

// Reduced counts in CI; `VIGIL_FUZZ_PER_OPERATION=50 npx ava test/integration/reliability-fuzz.test.ts` by hand,
// or bench/soak.ts for the figures.
const PER_OPERATION = Number(process.env.VIGIL_FUZZ_PER_OPERATION ?? 4);

let d: TestDaemon;
test.before(async () => {
  d = await startTestDaemon({ server: ['max_request_bytes = 1048576', 'request_timeout_seconds = 30'] });
  await call(d, 'POST', '/v1/collections', { id: '_default', name: 'default' });
});
test.after.always(async () => {
  await d?.close();
});

test('fuzzing every operation in /openapi.json: no 500, every error in the envelope, every request answered, the daemon still ready', async (t) => {
  const openapi = (await call(d, 'GET', '/openapi.json')).json as Parameters<typeof fuzz>[1];
  const report = await fuzz(d.url, openapi, d.auth, {
    perOperation: PER_OPERATION,
    seed: 17,
    realImage: face('identities/obama/1.jpg'),
  });
  t.log(JSON.stringify({ requests: report.requests, byStatus: report.byStatus, serverErrors: report.serverErrors }));
  t.true(report.requests > 100);
  t.deepEqual(report.outsideEnvelope, []);
  t.deepEqual(report.noReply, []);
  const allowed5xx = Object.keys(report.serverErrors).filter(
    (k) =>
      !/^503 (request_timeout|service_not_ready|search_index_unavailable|scraper_not_configured|scraper_disabled)$/.test(
        k,
      ),
  );
  t.deepEqual(allowed5xx, [], JSON.stringify(report.serverErrors));
  const health = await call(d, 'GET', '/v1/health');
  t.is(health.json.status, 'ready');
});
