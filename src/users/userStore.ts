import type { RoleT } from '../contract/users.js';
import type { Db } from '../store/database.js';

export interface UserRow {
  id: string;
  username: string;
  role: RoleT;
  password_hash: string;
  created_at: string;
  updated_at: string;
  password_changed_at: string;
  last_sign_in_at: string | null;
}

export interface SessionRow {
  id: string;
  user_id: string;
  created_at: string;
  last_seen_at: string;
  last_seen_ms: number;
  expires_ms: number;
  address: string;
  user_agent: string;
}

/** A session with the user it belongs to (the role is read at each request, so a role change applies at once). */
export interface SessionWithUser extends SessionRow {
  username: string;
  role: RoleT;
}

const SESSION_COLS =
  's.id, s.user_id, s.created_at, s.last_seen_at, s.last_seen_ms, s.expires_ms, s.address, s.user_agent, u.username, u.role';

/**
 * Users and their sessions in this box's SQLite file. Every check that spans rows (the last admin, the first
 * user) runs in one transaction, so two requests (or the CLI beside the daemon) cannot both pass it.
 */
export class UserStore {
  constructor(private readonly db: Db) {}

  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n;
  }

  list(): UserRow[] {
    return this.db.prepare('SELECT * FROM users ORDER BY username COLLATE NOCASE').all() as UserRow[];
  }

  get(id: string): UserRow | null {
    return (this.db.prepare('SELECT * FROM users WHERE id = ?').get(id) as UserRow | undefined) ?? null;
  }

  byName(username: string): UserRow | null {
    return (this.db.prepare('SELECT * FROM users WHERE username = ?').get(username) as UserRow | undefined) ?? null;
  }

  /** Inserts the user; false when the name is taken. `onlyIfEmpty`: only when no user exists (first-admin set-up). */
  insert(row: UserRow, onlyIfEmpty = false): 'inserted' | 'exists' | 'not_empty' {
    return this.db.transaction(() => {
      if (onlyIfEmpty && this.count() > 0) return 'not_empty' as const;
      if (this.byName(row.username)) return 'exists' as const;
      this.db
        .prepare(
          `INSERT INTO users (id, username, role, password_hash, created_at, updated_at, password_changed_at, last_sign_in_at)
           VALUES (@id, @username, @role, @password_hash, @created_at, @updated_at, @password_changed_at, @last_sign_in_at)`,
        )
        .run(row);
      return 'inserted' as const;
    })();
  }

  /**
   * Applies `change` to the user unless it would leave no admin. Returns the user after the change, null when
   * it does not exist, 'last_admin' when refused.
   */
  update(
    id: string,
    change: { role?: RoleT; password_hash?: string; remove?: boolean },
    at: string,
  ): UserRow | null | 'last_admin' {
    return this.db.transaction(() => {
      const user = this.get(id);
      if (!user) return null;
      const losesAdmin = user.role === 'admin' && (change.remove || (change.role && change.role !== 'admin'));
      if (losesAdmin) {
        const admins = this.db.prepare("SELECT count(*) AS n FROM users WHERE role = 'admin'").get() as { n: number };
        if (admins.n <= 1) return 'last_admin' as const;
      }
      if (change.remove) {
        // Its sessions go with it (ON DELETE CASCADE).
        this.db.prepare('DELETE FROM users WHERE id = ?').run(id);
        return user;
      }
      if (change.role)
        this.db.prepare('UPDATE users SET role = ?, updated_at = ? WHERE id = ?').run(change.role, at, id);
      if (change.password_hash)
        this.db
          .prepare('UPDATE users SET password_hash = ?, password_changed_at = ?, updated_at = ? WHERE id = ?')
          .run(change.password_hash, at, at, id);
      return this.get(id);
    })();
  }

  /** A re-hash with today's parameters: the password itself is unchanged, so nothing else is. */
  replaceHash(id: string, hash: string): void {
    this.db.prepare('UPDATE users SET password_hash = ? WHERE id = ?').run(hash, id);
  }

  signedIn(id: string, at: string): void {
    this.db.prepare('UPDATE users SET last_sign_in_at = ? WHERE id = ?').run(at, id);
  }

  insertSession(row: SessionRow, digest: Buffer): void {
    this.db
      .prepare(
        `INSERT INTO user_sessions (id, user_id, digest, created_at, last_seen_at, last_seen_ms, expires_ms, address, user_agent)
         VALUES (@id, @user_id, @digest, @created_at, @last_seen_at, @last_seen_ms, @expires_ms, @address, @user_agent)`,
      )
      .run({ ...row, digest });
  }

  sessionByDigest(digest: Buffer): SessionWithUser | null {
    return (
      (this.db
        .prepare(`SELECT ${SESSION_COLS} FROM user_sessions s JOIN users u ON u.id = s.user_id WHERE s.digest = ?`)
        .get(digest) as SessionWithUser | undefined) ?? null
    );
  }

  session(id: string): SessionWithUser | null {
    return (
      (this.db
        .prepare(`SELECT ${SESSION_COLS} FROM user_sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?`)
        .get(id) as SessionWithUser | undefined) ?? null
    );
  }

  /** Sessions still valid at `nowMs` (not past their absolute or idle end), newest first; one user's or all. */
  sessions(userId: string | null, nowMs: number, idleMs: number): SessionWithUser[] {
    return this.db
      .prepare(
        `SELECT ${SESSION_COLS} FROM user_sessions s JOIN users u ON u.id = s.user_id
         WHERE s.expires_ms > @now AND s.last_seen_ms > @now - @idle AND (@user IS NULL OR s.user_id = @user)
         ORDER BY s.created_at DESC, s.id`,
      )
      .all({ now: nowMs, idle: idleMs, user: userId }) as SessionWithUser[];
  }

  touchSession(id: string, at: string, ms: number): void {
    this.db.prepare('UPDATE user_sessions SET last_seen_at = ?, last_seen_ms = ? WHERE id = ?').run(at, ms, id);
  }

  deleteSession(id: string): boolean {
    return this.db.prepare('DELETE FROM user_sessions WHERE id = ?').run(id).changes > 0;
  }

  /** Ends a user's sessions, but `keep` (the one that changed its own password). */
  deleteSessionsOf(userId: string, keep: string | null = null): number {
    return this.db.prepare('DELETE FROM user_sessions WHERE user_id = ? AND id IS NOT ?').run(userId, keep).changes;
  }

  /** Deletes the sessions past their end; the count. */
  pruneSessions(nowMs: number, idleMs: number): number {
    return this.db
      .prepare('DELETE FROM user_sessions WHERE expires_ms <= ? OR last_seen_ms <= ?')
      .run(nowMs, nowMs - idleMs).changes;
  }
}
