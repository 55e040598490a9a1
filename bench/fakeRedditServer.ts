/** The test suite's fake Reddit as a separate process for bench/scrape.ts (the upstream is remote, not in the daemon's process). */
import { FakeReddit } from '../test/helpers/fakeReddit.js';

const fake = await FakeReddit.start();
fake.latencyMs = Number(process.env.FAKE_REDDIT_LATENCY_MS ?? 50);
process.send?.({ url: fake.url, toml: fake.toml() });
process.on('disconnect', () => {
  void fake.close().then(() => process.exit(0));
});
