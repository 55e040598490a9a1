import test from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { REPO, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { FakeMaps, REAL_QUERY } from '../helpers/fakeMaps.js';
import { FakeReddit } from '../helpers/fakeReddit.js';

let fake: FakeReddit;
let maps: FakeMaps;
let d: TestDaemon;
let token = '';
test.before(async () => {
  fake = await FakeReddit.start();
  maps = await FakeMaps.start();
  d = await startTestDaemon({ toml: `${fake.toml()}\n${maps.toml()}` });
  await d.runtime.workspaces.create({ id: 'acme', name: 'Acme' });
  await d.runtime.workspaces.create({ id: 'other', name: 'Other' });
  token = (await d.runtime.workspaces.createKey('acme')).token;
});
test.after.always(async () => {
  await d?.close();
  await fake?.close();
  await maps?.close();
});

const CLIENT_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

async function exercise(t: any, client: Client) {
  const { tools } = await client.listTools();
  t.deepEqual(tools.map((x) => x.name).sort(), [
    'forum_scrape',
    'places_scrape',
    'runs_cancel',
    'runs_get',
    'runs_items',
  ]);
  t.true(
    tools.every((x) => CLIENT_NAME.test(x.name)),
    'names Claude/OpenAI clients accept',
  );
  const forum = tools.find((x) => x.name === 'forum_scrape')!;
  t.is(forum.inputSchema.type, 'object');
  t.truthy((forum.inputSchema.properties as any).max_items);
  t.true(forum.annotations?.readOnlyHint);
  t.truthy(forum.outputSchema);

  const res = await client.callTool({
    name: 'forum_scrape',
    arguments: { urls: ['https://redd.it/1q2w3e4'], max_comments: 1 },
  });
  t.falsy(res.isError);
  const out = res.structuredContent as any;
  t.is(out.status, 'succeeded');
  t.deepEqual(
    out.items.map((i: any) => i.id),
    ['t3_1q2w3e4', 't1_kq1a'],
  );
  t.is(out.billing.billed_units, 2);
  t.deepEqual(JSON.parse((res.content as any)[0].text), out, 'the same JSON as a text block for older clients');

  const dotted = await client.callTool({
    name: 'forum.scrape',
    arguments: { search_queries: ['x'], search_types: ['user'] },
  });
  t.deepEqual(
    (dotted.structuredContent as any).items.map((i: any) => i.dataType),
    ['user'],
    'the dotted name is accepted too',
  );

  const places = tools.find((x) => x.name === 'places_scrape')!;
  t.like((places.inputSchema.properties as any).max_places, { minimum: 1, maximum: 1000 });
  t.like((places.inputSchema.properties as any).max_reviews, { maximum: 100000 });
  const p = await client.callTool({
    name: 'places.scrape',
    arguments: { search_queries: [REAL_QUERY], max_reviews: 1 },
  });
  t.falsy(p.isError);
  const pout = p.structuredContent as any;
  t.deepEqual(
    pout.items.map((i: any) => [i.title, i.website, i.reviews.length]),
    [
      ['Blue Fern Coffee', 'https://bluefern.example/', 1],
      ['Sourdough Lab', null, 1],
    ],
  );
  t.like(pout.billing, { billed_units: 2, billed_reviews: 2 });
  const badPlaces = await client.callTool({
    name: 'places_scrape',
    arguments: { search_queries: ['x'], max_places: 5000 },
  });
  t.true(badPlaces.isError);
  t.regex((badPlaces.content as any)[0].text, /invalid_request.*max_places/);

  const run = await client.callTool({ name: 'runs_get', arguments: { run_id: out.run_id } });
  t.is((run.structuredContent as any).run_id, out.run_id);

  // The run's dataset a page at a time, through the same service as GET …/runs/{id}/items.
  const page1 = await client.callTool({ name: 'runs_items', arguments: { run_id: out.run_id, limit: 1 } });
  t.falsy(page1.isError);
  const p1 = page1.structuredContent as any;
  t.deepEqual(
    p1.items.map((i: any) => i.id),
    ['t3_1q2w3e4'],
  );
  t.truthy(p1.next_cursor);
  const page2 = await client.callTool({
    name: 'runs.items',
    arguments: { run_id: out.run_id, cursor: p1.next_cursor },
  });
  t.deepEqual(
    (page2.structuredContent as any).items.map((i: any) => i.id),
    ['t1_kq1a'],
  );
  t.is((page2.structuredContent as any).next_cursor, null);
  const forged = await client.callTool({
    name: 'runs_items',
    arguments: { run_id: pout.run_id, cursor: p1.next_cursor },
  });
  t.true(forged.isError, 'a cursor of another run');
  t.regex((forged.content as any)[0].text, /invalid_cursor/);
  const cancelDone = await client.callTool({ name: 'runs_cancel', arguments: { run_id: out.run_id } });
  t.true(cancelDone.isError);
  t.regex((cancelDone.content as any)[0].text, /run_not_active/);
  const tool = tools.find((x) => x.name === 'runs_cancel')!;
  t.false(tool.annotations?.readOnlyHint, 'cancel changes a run');

  const bad = await client.callTool({ name: 'forum_scrape', arguments: { community: 'typescript', max_items: 1000 } });
  t.true(bad.isError);
  t.regex((bad.content as any)[0].text, /invalid_request.*max_items/);
}

test.serial('Streamable HTTP at /mcp: tools/list and tools/call with a workspace key', async (t) => {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  try {
    await exercise(t, client);
  } finally {
    await client.close();
  }
  const runs = await d.runtime.scrapes.store.list('acme', 100);
  t.true(runs.length >= 2);
  t.deepEqual(await d.runtime.scrapes.store.list('other', 100), [], "calls are billed to the key's workspace");
  const anonymous = new Client({ name: 'test', version: '1.0.0' });
  await t.throwsAsync(
    anonymous.connect(
      new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${d.key}` } },
      }),
    ),
  );
  const get = await fetch(`${d.url}/mcp`, { headers: { Authorization: `Bearer ${token}` } });
  t.is(get.status, 405);
});

test.serial('stdio (vigil mcp --workspace): tools/list and tools/call forwarded to the daemon', async (t) => {
  const client = new Client({ name: 'test', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', 'src/cli/main.ts', 'mcp', '--workspace', 'acme', '--url', d.url],
    cwd: REPO,
    env: { ...process.env, VIGIL_WORKSPACE_KEY: token } as Record<string, string>,
    stderr: 'pipe',
  });
  await client.connect(transport);
  try {
    await exercise(t, client);
  } finally {
    await client.close();
  }
});
