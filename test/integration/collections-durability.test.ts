import test from 'ava';
import Database from 'better-sqlite3';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startChild } from '../helpers/daemonProcess.js';
import {
  call,
  face,
  form,
  labels,
  modelsDirWith,
  post,
  startTestDaemon,
  TEST_KEY,
  type TestDaemon,
} from '../helpers/daemon.js';
import { tempDir } from '../helpers/tempDir.js';

const PHOTOS = Object.values(labels.identities).flat();

test('restart: indexes are rebuilt from SQLite; another model pack gives collection_model_mismatch, delete still works', async (t) => {
  const dir = tempDir(t, 'vigil-restart-');
  let d: TestDaemon = await startTestDaemon({ dir });
  try {
    for (const [id, load] of [
      ['eager-c', 'eager'],
      ['lazy-c', 'lazy'],
    ]) {
      t.is((await call(d, 'POST', '/v1/collections', { id, name: id, search: { load_policy: load } })).status, 201);
      t.is(
        (
          await post(
            d,
            `/v1/collections/${id}/persons`,
            form({ id: 'obama', images: [face('identities/obama/1.jpg')] }),
          )
        ).res.status,
        201,
      );
    }
  } finally {
    await d.close();
  }
  d = await startTestDaemon({ dir });
  try {
    const sys = await call(d, 'GET', '/v1/system');
    const state = (id: string) =>
      sys.json.search.collections.find((c: { collection_id: string }) => c.collection_id === id);
    t.like(state('eager-c'), { state: 'ready', live_rows: 1 });
    t.like(state('lazy-c'), { state: 'unloaded' });
    for (const id of ['eager-c', 'lazy-c']) {
      const s = await post(d, `/v1/collections/${id}/search`, form({ image: face('identities/obama/2.jpg') }));
      t.is(s.json.matches[0]?.person.id, 'obama', id);
    }
  } finally {
    await d.close();
  }
  // The same data dir under a different model pack: model-bound uses refuse, delete is allowed.
  d = await startTestDaemon({ dir, pack: 'edge_open', toml: '[inference]\nmodel_pack = "edge_open"' });
  try {
    t.is((await call(d, 'GET', '/v1/collections')).status, 200);
    for (const r of [
      await call(d, 'GET', '/v1/collections/lazy-c'),
      await post(d, '/v1/collections/lazy-c/search', form({ image: face('identities/obama/2.jpg') })),
      await post(d, '/v1/detect', form({ image: face('identities/obama/2.jpg'), collection_id: 'lazy-c' })),
      await post(d, '/v1/collections/lazy-c/persons', form({ id: 'x', images: [face('identities/obama/3.jpg')] })),
    ]) {
      t.is(r.res.status, 409);
      t.is(r.json.error.code, 'collection_model_mismatch');
    }
    t.is((await call(d, 'DELETE', '/v1/collections/lazy-c?force=true')).status, 204);
  } finally {
    await d.close();
  }
});

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((res) => child.once('exit', () => res()));

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    // After a SIGKILL the integrity check runs once the daemon is ready (health degraded until it passes).
    const r = await fetch(`${url}/v1/health`).catch(() => null);
    if (r?.status === 200 && ((await r.json()) as { status: string }).status === 'ready') return;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('daemon did not become ready');
}

test('durability: SIGKILL during registrations loses no acknowledged face; the restart rebuilds and passes integrity_check', async (t) => {
  const dir = tempDir(t, 'vigil-kill-');
  const config = join(dir, 'server.toml');
  writeFileSync(
    config,
    [
      '[server]',
      'host = "127.0.0.1"',
      'port = 0',
      `data_dir = ${JSON.stringify(join(dir, 'data'))}`,
      `models_dir = ${JSON.stringify(await modelsDirWith('edge_s'))}`,
      'log_level = "info"',
      '[collections]',
      'default_load_policy = "eager"',
    ].join('\n'),
  );
  const auth = { Authorization: `Bearer ${TEST_KEY}` };
  let { child, url } = startChild(config);
  let base = await url;
  await waitReady(base);
  t.is(
    (
      await fetch(`${base}/v1/collections`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'k', name: 'K' }),
      })
    ).status,
    201,
  );

  // Two writers register continuously; the kill lands while requests are in flight.
  const acknowledged: { person: string; face: string; photo: string }[] = [];
  let n = 0;
  let killed = false;
  const writer = async () => {
    while (!killed) {
      const i = n++;
      const photo = PHOTOS[i % PHOTOS.length]!;
      const fd = new FormData();
      fd.append('id', `p${i}`);
      fd.append('images', new Blob([face(photo)]), 'x.jpg');
      const res = await fetch(`${base}/v1/collections/k/persons`, { method: 'POST', headers: auth, body: fd }).catch(
        () => null,
      );
      if (res?.status === 201) {
        const body = (await res.json()) as { faces: { id: string }[] };
        acknowledged.push({ person: `p${i}`, face: body.faces[0]!.id, photo });
      }
    }
  };
  const writers = [writer(), writer()];
  while (acknowledged.length < 8) await new Promise((res) => setTimeout(res, 20));
  child.kill('SIGKILL');
  killed = true;
  await Promise.all(writers);
  await exited(child);
  t.true(acknowledged.length >= 8);

  ({ child, url } = startChild(config));
  base = await url;
  try {
    await waitReady(base);
    const health = (await (await fetch(`${base}/v1/system`, { headers: auth })).json()) as {
      database: { quick_check: string };
    };
    t.is(health.database.quick_check, 'ok');
    for (const a of acknowledged) {
      const faces = (await (
        await fetch(`${base}/v1/collections/k/persons/${a.person}/faces`, { headers: auth })
      ).json()) as { faces: { id: string }[] };
      t.deepEqual(
        faces.faces.map((f) => f.id),
        [a.face],
        a.person,
      );
    }
    // Every acknowledged face is in the rebuilt index: searching its own photo returns it at ~1.0.
    for (const a of acknowledged.slice(0, 4)) {
      const fd = new FormData();
      fd.append('image', new Blob([face(a.photo)]), 'q.jpg');
      fd.append('limit', '100');
      const s = (await (
        await fetch(`${base}/v1/collections/k/search`, { method: 'POST', headers: auth, body: fd })
      ).json()) as { matches: { matched_face_id: string; similarity: number }[] };
      const hit = s.matches.find((m) => m.matched_face_id === a.face);
      t.truthy(hit, a.person);
      t.true(hit!.similarity > 0.999);
    }
  } finally {
    child.kill('SIGTERM');
    await exited(child);
  }
  const db = new Database(join(dir, 'data', 'vigil.db'), { readonly: true });
  t.deepEqual(db.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
  const count = (db.prepare('SELECT face_count FROM collections WHERE id = ?').get('k') as { face_count: number })
    .face_count;
  t.is(count, (db.prepare('SELECT count(*) AS n FROM face_samples').get() as { n: number }).n);
  t.true(count >= acknowledged.length);
  db.close();
});
