import test from 'ava';
import { call, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { fleetStoreToml, pgStoreToml, startPostgres, type PgCluster } from '../helpers/postgres.js';
import { eventually } from '../helpers/shared.js';
import { unitVectors } from '../helpers/vectors.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * Fleet mode: two real daemons (each with its own data dir, replica and indexes) on one real PostgreSQL
 * cluster (Debian's postgresql, a throw-away cluster on a loopback port). No mocks. Serial: one test
 * stops the shared cluster.
 */
let pg: PgCluster;
let dbs = 0;
test.before(async () => {
  pg = await startPostgres();
});
test.after.always(() => {
  pg?.stop();
});

async function fleet(n = 2): Promise<{ boxes: TestDaemon[]; url: string; close: () => Promise<void> }> {
  const url = pg.createDatabase(`fleet_${process.pid}_${++dbs}`);
  const boxes: TestDaemon[] = [];
  for (let i = 0; i < n; i++) {
    boxes.push(await startTestDaemon({ server: [`box_id = "box-${i}"`], toml: fleetStoreToml(url) }));
  }
  return {
    boxes,
    url,
    close: async () => {
      await Promise.all(boxes.map((b) => b.close()));
    },
  };
}

const OBAMA = [
  'identities/obama/1.jpg',
  'identities/obama/2.jpg',
  'identities/obama/3.jpg',
  'identities/obama/4.jpg',
  'identities/obama/5.jpg',
];
const BIDEN = ['identities/biden/1.jpg', 'identities/biden/2.jpg'];

const search = (d: TestDaemon, cid: string, img: Buffer) =>
  post(d, `/v1/collections/${cid}/search`, form({ image: img }));

test.serial(
  'enrol on A is searchable on B; patch and delete propagate; the writing box answers from its own replica at once',
  async (t) => {
    const {
      boxes: [a, b],
      close,
    } = await fleet();
    try {
      t.is(
        (await call(a!, 'POST', '/v1/collections', { id: 'site', name: 'Site', search: { load_policy: 'eager' } }))
          .status,
        201,
      );
      // The creating box has it at once; the other box after its follower wakes.
      t.is((await call(a!, 'GET', '/v1/collections/site')).status, 200);
      t.is(
        (
          await eventually(
            () => call(b!, 'GET', '/v1/collections/site'),
            (r) => r.status === 200,
          )
        ).status,
        200,
      );

      const reg = await post(
        a!,
        '/v1/collections/site/persons',
        form({ id: 'obama', name: 'Barack', images: OBAMA.slice(0, 2).map(face) }),
      );
      t.is(reg.res.status, 201, JSON.stringify(reg.json));
      t.is(reg.json.faces.length, 2);
      // Searchable on A as soon as acknowledged.
      const onA = await search(a!, 'site', face(OBAMA[3]!));
      t.is(onA.json.matches[0]?.person.id, 'obama');
      const onB = await eventually(
        () => search(b!, 'site', face(OBAMA[3]!)),
        (r) => r.json.matches?.[0]?.person.id === 'obama',
      );
      t.is(onB.json.matches[0].person.id, 'obama');
      t.is(onB.json.matches[0].matched_face_id, onA.json.matches[0].matched_face_id, 'the same face ids on every box');
      const colB = (await call(b!, 'GET', '/v1/collections/site')).json.collection;
      const colA = (await call(a!, 'GET', '/v1/collections/site')).json.collection;
      t.like(colB, { face_count: 2, person_count: 1, search_revision: colA.search_revision });

      // Person patch on B shows on A.
      t.is(
        (await call(b!, 'PATCH', '/v1/collections/site/persons/obama', { name: 'President' })).json.person.name,
        'President',
      );
      const pa = await eventually(
        () => call(a!, 'GET', '/v1/collections/site/persons/obama'),
        (r) => r.json.person?.name === 'President',
      );
      t.is(pa.json.person.name, 'President');

      // Add faces on B, delete one on A.
      const add = await post(b!, '/v1/collections/site/persons/obama/faces', form({ images: [face(OBAMA[2]!)] }));
      t.is(add.res.status, 201, JSON.stringify(add.json));
      const added = add.json.faces[0].id as string;
      await eventually(
        () => call(a!, 'GET', '/v1/collections/site'),
        (r) => r.json.collection?.face_count === 3,
      );
      t.is((await call(a!, 'DELETE', `/v1/collections/site/persons/obama/faces/${added}`)).status, 204);
      await eventually(
        () => call(b!, 'GET', '/v1/collections/site'),
        (r) => r.json.collection?.face_count === 2,
      );

      // Delete the person on B: gone from search on A.
      t.is((await call(b!, 'DELETE', '/v1/collections/site/persons/obama')).status, 204);
      t.deepEqual((await search(b!, 'site', face(OBAMA[3]!))).json.matches, []);
      const gone = await eventually(
        () => search(a!, 'site', face(OBAMA[3]!)),
        (r) => Array.isArray(r.json.matches) && r.json.matches.length === 0,
      );
      t.deepEqual(gone.json.matches, []);

      // A force delete of the collection on A reaches B.
      t.is((await call(a!, 'DELETE', '/v1/collections/site?force=true')).status, 204);
      t.is(
        (
          await eventually(
            () => call(b!, 'GET', '/v1/collections/site'),
            (r) => r.status === 404,
          )
        ).status,
        404,
      );

      const health = (await call(a!, 'GET', '/v1/health')).json;
      t.like(health, { status: 'ready', fleet: { box_id: 'box-0', database: 'connected' } });
    } finally {
      await close();
    }
  },
);

test.serial('concurrent registration across boxes never exceeds capacity_rows', async (t) => {
  const { boxes, close } = await fleet(2);
  try {
    const [a, b] = boxes;
    t.is(
      (await call(a!, 'POST', '/v1/collections', { id: 'race', name: 'Race', search: { capacity_rows: 3 } })).status,
      201,
    );
    await eventually(
      () => call(b!, 'GET', '/v1/collections/race'),
      (r) => r.status === 200,
    );
    const files = [...OBAMA, ...BIDEN, 'identities/rob_lowe/1.jpg'];
    const results = await Promise.all(
      files.map((f, i) =>
        post(boxes[i % 2]!, '/v1/collections/race/persons', form({ id: `p${i}`, images: [face(f)] })),
      ),
    );
    const codes = results.map((r) => r.res.status);
    t.is(codes.filter((s) => s === 201).length, 3, JSON.stringify(codes));
    t.true(
      results
        .filter((r) => r.res.status !== 201)
        .every((r) => r.res.status === 409 && r.json.error.code === 'collection_capacity_exceeded'),
      JSON.stringify(results.map((r) => r.json.error?.code)),
    );
    for (const d of boxes) {
      const c = await eventually(
        () => call(d, 'GET', '/v1/collections/race'),
        (r) => r.json.collection?.face_count === 3,
      );
      t.like(c.json.collection, { face_count: 3, person_count: 3, search_revision: 3 });
    }
  } finally {
    await close();
  }
});

test.serial(
  'bulk import on one box is searchable by vector-identical ids on the other (external_trusted)',
  async (t) => {
    const {
      boxes: [a, b],
      close,
    } = await fleet();
    try {
      const created = await call(a!, 'POST', '/v1/collections', { id: 'bulk', name: 'Bulk' });
      const contract = created.json.collection.embedding_contract_id as string;
      const vecs = unitVectors(50, 7);
      const body = vecs
        .map((v, i) => JSON.stringify({ id: `v${i}`, embeddings: [Buffer.from(v.buffer).toString('base64')] }))
        .join('\n');
      const res = await fetch(
        `${a!.url}/v1/collections/bulk/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=20`,
        { method: 'POST', headers: { ...a!.auth, 'content-type': 'application/x-ndjson' }, body },
      );
      const lines = (await res.text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      t.like(lines.at(-1), { type: 'done', persons: 50, faces: 50 });
      const c = await eventually(
        () => call(b!, 'GET', '/v1/collections/bulk'),
        (r) => r.json.collection?.face_count === 50,
      );
      t.like(c.json.collection, { person_count: 50, face_count: 50 });
      const persons = await call(b!, 'GET', '/v1/collections/bulk/persons?limit=100');
      t.is(persons.json.persons.length, 50);
    } finally {
      await close();
    }
  },
);

test.serial(
  'a box that loses the database keeps searching, reports degraded, answers writes 503 store_unavailable, and catches up',
  async (t) => {
    const {
      boxes: [a, b],
      close,
    } = await fleet();
    try {
      t.is(
        (await call(a!, 'POST', '/v1/collections', { id: 'edge', name: 'Edge', search: { load_policy: 'eager' } }))
          .status,
        201,
      );
      t.is(
        (await post(a!, '/v1/collections/edge/persons', form({ id: 'obama', images: [face(OBAMA[0]!)] }))).res.status,
        201,
      );
      await eventually(
        () => search(b!, 'edge', face(OBAMA[1]!)),
        (r) => r.json.matches?.[0]?.person.id === 'obama',
      );

      pg.stopServer();
      try {
        // Search keeps working from the replica on both boxes.
        for (const d of [a!, b!]) t.is((await search(d, 'edge', face(OBAMA[1]!))).json.matches[0].person.id, 'obama');
        const w = await post(b!, '/v1/collections/edge/persons', form({ id: 'biden', images: [face(BIDEN[0]!)] }));
        t.is(w.res.status, 503);
        t.is(w.json.error.code, 'store_unavailable');
        t.is(w.json.error.details.write_committed, false);
        const h = await eventually(
          () => call(b!, 'GET', '/v1/health'),
          (r) => r.json.status === 'degraded',
        );
        t.like(h.json, {
          status: 'degraded',
          reasons: [{ code: 'store_unavailable' }],
          fleet: { database: 'disconnected' },
        });
      } finally {
        pg.startServer();
      }
      // Back: health recovers, writes work, and the other box catches up by revision (no full copy).
      await eventually(
        () => call(b!, 'GET', '/v1/health'),
        (r) => r.json.status === 'ready',
      );
      await eventually(
        () => call(a!, 'GET', '/v1/health'),
        (r) => r.json.status === 'ready',
      );
      const fullBefore = (await call(a!, 'GET', '/v1/system')).json.fleet.full_copies as number;
      const w2 = await post(b!, '/v1/collections/edge/persons', form({ id: 'biden', images: [face(BIDEN[0]!)] }));
      t.is(w2.res.status, 201, JSON.stringify(w2.json));
      const found = await eventually(
        () => search(a!, 'edge', face(BIDEN[1]!)),
        (r) => r.json.matches?.[0]?.person.id === 'biden',
      );
      t.is(found.json.matches[0].person.id, 'biden');
      t.is(
        (await call(a!, 'GET', '/v1/system')).json.fleet.full_copies,
        fullBefore,
        'caught up by revision, not by a copy',
      );
    } finally {
      await close();
    }
  },
);

test.serial(
  'vigil store migrate --to postgres copies a SQLite box (counts and checksums match); the box and a new one then follow it',
  async (t) => {
    const { join } = await import('node:path');
    const { runStoreCommand } = await import('../../src/cli/store.js');
    const dir = tempDir(t, 'vigil-migrate-');
    let d = await startTestDaemon({ dir });
    try {
      const created = await call(d, 'POST', '/v1/collections', {
        id: 'home',
        name: 'Home',
        search: { load_policy: 'eager' },
      });
      t.is(
        (
          await post(
            d,
            '/v1/collections/home/persons',
            form({ id: 'obama', name: 'Barack', images: OBAMA.slice(0, 2).map(face) }),
          )
        ).res.status,
        201,
      );
      const contract = created.json.collection.embedding_contract_id as string;
      const body = unitVectors(40, 11)
        .map((v, i) => JSON.stringify({ id: `v${i}`, embeddings: [Buffer.from(v.buffer).toString('base64')] }))
        .join('\n');
      await (
        await fetch(`${d.url}/v1/collections/home/import?embedding_contract_id=${encodeURIComponent(contract)}`, {
          method: 'POST',
          headers: { ...d.auth, 'content-type': 'application/x-ndjson' },
          body,
        })
      ).text();
    } finally {
      await d.close();
    }
    const url = pg.createDatabase(`migrate_${process.pid}`);
    let out = '';
    const code = await runStoreCommand(
      ['migrate', '--to', 'postgres', '--config', join(dir, 'server.toml'), '--url', url, '--json'],
      { stdout: { write: (s: string) => (out += s) }, stderr: { write: () => true } },
    );
    t.is(code, 0, out);
    const report = JSON.parse(out) as {
      ok: boolean;
      sqlite: Record<string, { rows: number; sha256: string }>;
      postgres: Record<string, { rows: number; sha256: string }>;
    };
    t.true(report.ok);
    t.like(report.sqlite, { collections: { rows: 1 }, persons: { rows: 41 }, face_samples: { rows: 42 } });
    t.deepEqual(report.postgres, report.sqlite);
    // A second run refuses (the collection is there) and copies nothing.
    await t.throwsAsync(
      runStoreCommand(['migrate', '--to', 'postgres', '--config', join(dir, 'server.toml'), '--url', url], {
        stdout: { write: () => true },
        stderr: { write: () => true },
      }),
      { message: /already has collection/ },
    );

    const toml = pgStoreToml(url);
    d = await startTestDaemon({ dir, toml, server: ['box_id = "old"'] });
    const fresh = await startTestDaemon({ toml, server: ['box_id = "new"'] });
    try {
      // The migrated box's replica is already current: no full copy.
      t.is((await call(d, 'GET', '/v1/system')).json.fleet.full_copies, 0);
      for (const box of [d, fresh]) {
        t.like((await call(box, 'GET', '/v1/collections/home')).json.collection, { person_count: 41, face_count: 42 });
        t.is((await search(box, 'home', face(OBAMA[3]!))).json.matches[0]?.person.id, 'obama');
      }
      // New writes on the new box reach the old one.
      t.is(
        (await post(fresh, '/v1/collections/home/persons', form({ id: 'biden', images: [face(BIDEN[0]!)] }))).res
          .status,
        201,
      );
      t.is(
        (
          await eventually(
            () => search(d, 'home', face(BIDEN[1]!)),
            (r) => r.json.matches?.[0]?.person.id === 'biden',
          )
        ).json.matches[0].person.id,
        'biden',
      );
    } finally {
      await Promise.all([d.close(), fresh.close()]);
    }
  },
);

test.serial(
  'a database restart during writes loses no acknowledged write; every box ends with the same gallery',
  async (t) => {
    const {
      boxes: [a, b],
      close,
    } = await fleet();
    try {
      const created = await call(a!, 'POST', '/v1/collections', { id: 'restart', name: 'R' });
      const contract = created.json.collection.embedding_contract_id as string;
      const vs = unitVectors(400, 13);
      const acked: string[] = [];
      let failed = 0;
      let stop = false;
      const writer = (async () => {
        for (let i = 0; i < vs.length && !stop; i++) {
          const box = i % 2 ? b! : a!;
          const res = await fetch(
            `${box.url}/v1/collections/restart/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=1`,
            {
              method: 'POST',
              headers: { ...box.auth, 'content-type': 'application/x-ndjson' },
              body: JSON.stringify({ id: `w${i}`, embeddings: [Buffer.from(vs[i]!.buffer).toString('base64')] }),
            },
          ).catch(() => null);
          const text = res ? await res.text() : '';
          if (res?.status === 200 && text.includes('"done"')) acked.push(`w${i}`);
          else failed++;
        }
      })();
      await new Promise((r) => setTimeout(r, 1500));
      pg.restart();
      await new Promise((r) => setTimeout(r, 1500));
      stop = true;
      await writer;
      t.true(acked.length > 0);
      const personIds = async (d: TestDaemon): Promise<Set<string>> => {
        const ids = new Set<string>();
        let cursor: string | null = null;
        do {
          const page = await call(
            d,
            'GET',
            `/v1/collections/restart/persons?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
          );
          for (const p of page.json.persons as { id: string }[]) ids.add(p.id);
          cursor = page.json.next_cursor as string | null;
        } while (cursor);
        return ids;
      };
      for (const d of [a!, b!]) {
        // Wait for the acknowledged ids themselves: writes committed but never acknowledged (cut by the restart)
        // also count, so a face count can reach acked.length while the box still lags by a revision.
        const { ids, c } = await eventually(
          async () => ({ ids: await personIds(d), c: await call(d, 'GET', '/v1/collections/restart') }),
          (v) => acked.every((id) => v.ids.has(id)) && v.c.json.collection?.face_count === v.ids.size,
        );
        t.true(
          acked.every((id) => ids.has(id)),
          `${acked.filter((id) => !ids.has(id)).length} acknowledged writes missing on a box`,
        );
        t.is(c.json.collection.face_count, ids.size);
      }
      const [ca, cb] = await Promise.all([a!, b!].map((d) => call(d, 'GET', '/v1/collections/restart')));
      t.is(ca!.json.collection.search_revision, cb!.json.collection.search_revision);
      t.log(`acknowledged ${acked.length}, refused ${failed} during the restart`);
    } finally {
      await close();
    }
  },
);
