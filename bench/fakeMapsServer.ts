/** The test suite's fake Google Maps as a separate process for bench/places.ts (the upstream is remote, not in the scraper's process). */
import { FakeMaps } from '../test/helpers/fakeMaps.js';

const fake = await FakeMaps.start();
fake.latencyMs = Number(process.env.FAKE_MAPS_LATENCY_MS ?? 20);
process.send?.({ url: fake.url });
process.on('disconnect', () => {
  void fake.close().then(() => process.exit(0));
});
