import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Errors } from '../contract/errors.js';
import type { Db } from '../store/database.js';

export const KIOSK_TOKEN_PREFIX = 'vk_';

export interface KioskToken {
  id: string;
  label: string;
  prefix: string;
  monitor_ids: string[];
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

interface Row extends Omit<KioskToken, 'monitor_ids'> {
  monitor_ids: string;
}

const digest = (token: string) => createHash('sha256').update(token).digest();
const COLS = 'id, label, prefix, monitor_ids, created_at, last_used_at, revoked_at';
const toToken = (r: Row): KioskToken => ({ ...r, monitor_ids: JSON.parse(r.monitor_ids) as string[] });

/**
 * Preview-only kiosk tokens (vk_…): they open GET /v1/monitors/{id}/state and /preview.mjpeg for their
 * monitors and nothing else. Stored as sha256 digests (the token has 256 random bits, so no slow hash is
 * needed), in SQLite, so a kiosk URL keeps working after a restart until it is revoked.
 */
export class KioskTokenStore {
  constructor(private readonly db: Db) {}

  create(monitorIds: string[], label = ''): { token: string; kiosk: KioskToken } {
    const ids = [...new Set(monitorIds)];
    if (ids.length === 0) throw Errors.invalidRequest('a kiosk token needs at least one monitor id');
    const token = `${KIOSK_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const kiosk: KioskToken = {
      id: `kiosk_${randomUUID().replaceAll('-', '').slice(0, 16)}`,
      label,
      prefix: token.slice(0, KIOSK_TOKEN_PREFIX.length + 6),
      monitor_ids: ids,
      created_at: new Date().toISOString(),
      last_used_at: null,
      revoked_at: null,
    };
    this.db
      .prepare(
        'INSERT INTO kiosk_tokens (id, label, prefix, digest, monitor_ids, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(kiosk.id, label, kiosk.prefix, digest(token), JSON.stringify(ids), kiosk.created_at);
    return { token, kiosk };
  }

  list(): KioskToken[] {
    return (this.db.prepare(`SELECT ${COLS} FROM kiosk_tokens ORDER BY created_at, id`).all() as Row[]).map(toToken);
  }

  revoke(id: string): KioskToken {
    const res = this.db
      .prepare('UPDATE kiosk_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL')
      .run(new Date().toISOString(), id);
    const row = this.db.prepare(`SELECT ${COLS} FROM kiosk_tokens WHERE id = ?`).get(id) as Row | undefined;
    if (!row) throw Errors.kioskTokenNotFound(id);
    if (res.changes === 0) throw Errors.kioskTokenRevoked(id);
    return toToken(row);
  }

  /** Whether `token` is a live kiosk token for `monitorId` (a revoke applies to the next request). */
  allows(token: string, monitorId: string): boolean {
    if (!token.startsWith(KIOSK_TOKEN_PREFIX) || token.length > 256) return false;
    const row = this.db
      .prepare('SELECT id, monitor_ids, last_used_at FROM kiosk_tokens WHERE digest = ? AND revoked_at IS NULL')
      .get(digest(token)) as { id: string; monitor_ids: string; last_used_at: string | null } | undefined;
    if (!row || !(JSON.parse(row.monitor_ids) as string[]).includes(monitorId)) return false;
    const now = new Date().toISOString();
    if (row.last_used_at?.slice(0, 16) !== now.slice(0, 16))
      this.db.prepare('UPDATE kiosk_tokens SET last_used_at = ? WHERE id = ?').run(now, row.id);
    return true;
  }
}
