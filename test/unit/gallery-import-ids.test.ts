import test from 'ava';
import { uuidV7Generator } from '../../src/collections/galleryImport.js';

test('imported face ids are RFC 9562 version 7 UUIDs, unique and strictly increasing (they append to the unique index)', (t) => {
  const next = uuidV7Generator();
  const ids = Array.from({ length: 20_000 }, next);
  t.is(new Set(ids).size, ids.length);
  for (const id of ids) t.regex(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  for (let i = 1; i < ids.length; i++) if (!(ids[i - 1]! < ids[i]!)) return t.fail(`${ids[i - 1]} >= ${ids[i]}`);
  const ms = parseInt(ids[0]!.replaceAll('-', '').slice(0, 12), 16);
  t.true(Math.abs(ms - Date.now()) < 60_000, 'the first 48 bits are the Unix time in ms');
});
