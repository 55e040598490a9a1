import { startTestDaemon, type TestDaemon } from './daemon.js';
import { FakeMaps } from './fakeMaps.js';
import { FakeReddit } from './fakeReddit.js';

/** A daemon wired to both replay fakes, with one workspace (and its key) per name. */
export interface ScraperDaemon {
  d: TestDaemon;
  reddit: FakeReddit;
  maps: FakeMaps;
  keys: Record<string, string>;
  close(): Promise<void>;
}

/**
 * `scrapers` is the body of the `[scrapers]` section, `forum` extra lines of `[scrapers.forum]`; `toml` adds
 * further sections.
 */
export async function startScraperDaemon(o: {
  workspaces: string[];
  scrapers: string;
  forum?: string;
  toml?: string;
}): Promise<ScraperDaemon> {
  const reddit = await FakeReddit.start();
  const maps = await FakeMaps.start();
  const d = await startTestDaemon({
    toml: `[scrapers]\n${o.scrapers}\n${reddit.toml(o.forum)}\n${maps.toml()}${o.toml ? `\n${o.toml}` : ''}`,
  });
  const keys: Record<string, string> = {};
  for (const id of o.workspaces) {
    await d.runtime.workspaces.create({ id, name: id });
    keys[id] = (await d.runtime.workspaces.createKey(id)).token;
  }
  return {
    d,
    reddit,
    maps,
    keys,
    close: async () => {
      await d.close();
      await reddit.close();
      await maps.close();
    },
  };
}
