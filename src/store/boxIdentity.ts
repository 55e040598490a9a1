import type { Db } from './database.js';

/**
 * This box's id ([server] box_id). Configured: that. Not configured: in sqlite mode the id this data dir
 * first ran as (the hostname then; kept, so a renamed host keeps running its monitors), in postgres
 * (fleet) mode the hostname now, so a data dir restored onto another host is not taken for the first
 * box. The id in use is recorded either way.
 */
export function resolveBoxId(
  db: Db,
  configured: string | undefined,
  backend: 'sqlite' | 'postgres',
  host: string,
): string {
  const recorded = (db.prepare('SELECT box_id FROM box_identity WHERE id = 1').get() as { box_id: string } | undefined)
    ?.box_id;
  const id = configured ?? (backend === 'sqlite' && recorded ? recorded : host);
  if (id !== recorded)
    db.prepare(
      'INSERT INTO box_identity (id, box_id) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET box_id = excluded.box_id',
    ).run(id);
  return id;
}
