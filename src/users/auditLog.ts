import { userInfo } from 'node:os';
import type { AuditEntryT, AuditQueryT } from '../contract/users.js';
import { Errors } from '../contract/errors.js';
import { toPage, type CursorCodec, type Page } from '../store/cursors.js';
import type { Db } from '../store/database.js';

/** One thing someone did: written by the HTTP layer for every audited operation, and by CLI commands that write. */
export interface AuditRecord {
  source: AuditEntryT['source'];
  actor_type: AuditEntryT['actor_type'];
  actor: string;
  action: string;
  user_id?: string | null;
  session_id?: string | null;
  address?: string | null;
  method?: string | null;
  path?: string | null;
  status?: number | null;
  error_code?: string | null;
  request_id?: string | null;
  detail?: Record<string, unknown>;
}

interface Row {
  seq: number;
  at: string;
  source: AuditEntryT['source'];
  actor_type: AuditEntryT['actor_type'];
  actor: string;
  user_id: string | null;
  session_id: string | null;
  address: string | null;
  action: string;
  method: string | null;
  path: string | null;
  status: number | null;
  error_code: string | null;
  request_id: string | null;
  detail: string;
}

const DAY_MS = 86_400_000;

const entryView = (r: Row): AuditEntryT => ({
  id: String(r.seq),
  at: r.at,
  source: r.source,
  actor_type: r.actor_type,
  actor: r.actor,
  user_id: r.user_id,
  session_id: r.session_id,
  address: r.address,
  action: r.action,
  method: r.method,
  path: r.path,
  status: r.status,
  error_code: r.error_code,
  request_id: r.request_id,
  detail: JSON.parse(r.detail) as Record<string, unknown>,
});

/** The operating-system user running a CLI command (the actor of what it records); under sudo, who ran sudo. */
export function cliActor(env: NodeJS.ProcessEnv = process.env): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = `uid ${process.getuid?.() ?? '?'}`;
  }
  return env.SUDO_USER && env.SUDO_USER !== user ? `${env.SUDO_USER} (sudo as ${user})` : user;
}

/**
 * The audit log: who did what and when, in this box's SQLite file (with the users it names). Append-only
 * but for the retention prune; entries never hold request bodies (passwords, images), only what the
 * operation's path names and a small detail its handler adds.
 */
export class AuditLog {
  constructor(
    private readonly db: Db,
    private readonly cursors: CursorCodec | null = null,
    private readonly now: () => number = Date.now,
  ) {}

  record(r: AuditRecord): void {
    const ms = this.now();
    this.db
      .prepare(
        `INSERT INTO audit_log (at, at_ms, source, actor_type, actor, user_id, session_id, address, action, method, path, status, error_code, request_id, detail)
         VALUES (@at, @at_ms, @source, @actor_type, @actor, @user_id, @session_id, @address, @action, @method, @path, @status, @error_code, @request_id, @detail)`,
      )
      .run({
        at: new Date(ms).toISOString(),
        at_ms: ms,
        source: r.source,
        actor_type: r.actor_type,
        actor: r.actor,
        user_id: r.user_id ?? null,
        session_id: r.session_id ?? null,
        address: r.address ?? null,
        action: r.action,
        method: r.method ?? null,
        path: r.path ?? null,
        status: r.status ?? null,
        error_code: r.error_code ?? null,
        request_id: r.request_id ?? null,
        detail: JSON.stringify(r.detail ?? {}),
      });
  }

  /** Newest first, filtered; the signed cursor is bound to the filters (as the events list's). */
  list(q: AuditQueryT): Page<AuditEntryT> {
    if (!this.cursors) throw new Error('AuditLog.list needs a cursor codec');
    const f = { actor: q.actor ?? null, action: q.action ?? null, since: q.since ?? null, until: q.until ?? null };
    const scope = `audit:${JSON.stringify(f)}`;
    let before: number | null = null;
    if (q.cursor) {
      before = Number(this.cursors.decode(q.cursor, scope));
      if (!Number.isSafeInteger(before)) throw Errors.invalidCursor('malformed');
    }
    const rows = this.db
      .prepare(
        `SELECT * FROM audit_log
         WHERE (@before IS NULL OR seq < @before) AND (@actor IS NULL OR actor = @actor)
           AND (@action IS NULL OR action = @action) AND (@since IS NULL OR at_ms >= @since) AND (@until IS NULL OR at_ms < @until)
         ORDER BY seq DESC LIMIT @limit`,
      )
      .all({
        before,
        actor: f.actor,
        action: f.action,
        since: f.since === null ? null : Date.parse(f.since),
        until: f.until === null ? null : Date.parse(f.until),
        limit: q.limit + 1,
      }) as Row[];
    const page = toPage(rows, q.limit, (r) => String(r.seq), this.cursors, scope);
    return { items: page.items.map(entryView), next_cursor: page.next_cursor };
  }

  /** Deletes entries older than `retentionDays` (0 keeps everything); the count. */
  prune(retentionDays: number): number {
    if (retentionDays <= 0) return 0;
    return this.db.prepare('DELETE FROM audit_log WHERE at_ms < ?').run(this.now() - retentionDays * DAY_MS).changes;
  }
}
