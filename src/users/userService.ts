import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Errors } from '../contract/errors.js';
import type { RoleT, SessionT, UserT } from '../contract/users.js';
import { hashPassword, needsRehash, verifyPassword } from './passwordHash.js';
import { PASSWORD_PROBLEM_TEXT, passwordProblem } from './passwordRules.js';
import { newSetupCode, setupCodeMatches } from './setupCode.js';
import type { SessionWithUser, UserRow, UserStore } from './userStore.js';

export interface SessionPolicy {
  /** A session not used for this long ends. */
  idleMs: number;
  /** A session ends this long after sign-in, used or not. */
  maxMs: number;
}

/** Where a sign-in came from, kept with the session so its owner can recognise it in the list. */
export interface ClientInfo {
  address: string;
  userAgent: string;
}

/** A new session: the token goes into the cookie and is never stored; the CSRF token is derived from it. */
export interface SignedIn {
  user: UserT;
  session: SessionT;
  token: string;
  csrfToken: string;
}

/** A request's session, found by its cookie token. */
export interface SessionAuth {
  sessionId: string;
  userId: string;
  username: string;
  role: RoleT;
}

/** Sessions are re-stamped as used at most this often (one write a minute per active browser, not per request). */
const TOUCH_EVERY_MS = 60_000;
const CSRF_LABEL = 'vigil csrf v1';
/** Generous bound on a cookie token before it is hashed (ours are 43 characters). */
const MAX_TOKEN = 256;

const randomId = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;
const tokenDigest = (token: string) => createHash('sha256').update(token).digest();
const iso = (ms: number) => new Date(ms).toISOString();

export const userView = (u: UserRow): UserT => ({
  id: u.id,
  username: u.username,
  role: u.role,
  created_at: u.created_at,
  updated_at: u.updated_at,
  password_changed_at: u.password_changed_at,
  last_sign_in_at: u.last_sign_in_at,
});

/**
 * User accounts (admin, operator, viewer) and their browser sessions. Passwords are scrypt hashes
 * (passwordHash.ts); a session is a 256-bit random token whose sha256 is stored, valid until it is idle for
 * `idleMs`, `maxMs` after sign-in, its sign-out or revoke, or its user's deletion or password change.
 * Knows nothing of HTTP: cookies and CSRF headers are the HTTP layer's.
 */
export class UserService {
  private setupCode: string | null = null;
  /** One password check at a time: each takes 32 MiB and ~0.1 s of CPU (a burst queues instead). */
  private hashQueue: Promise<unknown> = Promise.resolve();
  /** Checked when the username is unknown, so the answer takes as long as for a wrong password. */
  private decoyHash: Promise<string> | null = null;

  constructor(
    private readonly store: UserStore,
    private readonly policy: SessionPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  // ---- accounts ----

  list(): UserT[] {
    return this.store.list().map(userView);
  }

  get(id: string): UserT {
    const u = this.store.get(id);
    if (!u) throw Errors.userNotFound(id);
    return userView(u);
  }

  /** The user of this name (case-insensitive), for the CLI. */
  byName(username: string): UserT {
    const u = this.store.byName(username);
    if (!u) throw Errors.userNotFound(username);
    return userView(u);
  }

  count(): number {
    return this.store.count();
  }

  async create(input: { username: string; password: string; role: RoleT }): Promise<UserT> {
    return userView(await this.insert(input, false));
  }

  /** Changes a user's role and/or password; a new password ends every session of the user. */
  async update(id: string, patch: { role?: RoleT; password?: string }): Promise<UserT> {
    const existing = this.store.get(id);
    if (!existing) throw Errors.userNotFound(id);
    const hash = patch.password === undefined ? undefined : await this.newHash(patch.password, existing.username);
    const updated = this.store.update(id, { role: patch.role, password_hash: hash }, iso(this.now()));
    if (updated === null) throw Errors.userNotFound(id);
    if (updated === 'last_admin') throw Errors.lastAdmin(existing.username);
    if (hash) this.store.deleteSessionsOf(id);
    return userView(updated);
  }

  remove(id: string): UserT {
    const removed = this.store.update(id, { remove: true }, iso(this.now()));
    if (removed === null) throw Errors.userNotFound(id);
    if (removed === 'last_admin') throw Errors.lastAdmin(this.store.get(id)?.username ?? id);
    return userView(removed);
  }

  /** A signed-in user's own password change: the current password is asked again; other sessions end. */
  async changeOwnPassword(auth: SessionAuth, current: string, next: string): Promise<UserT> {
    const user = this.store.get(auth.userId);
    if (!user || !(await this.check(current, user.password_hash))) throw Errors.invalidCredentials();
    const hash = await this.newHash(next, user.username);
    const updated = this.store.update(user.id, { password_hash: hash }, iso(this.now()));
    if (!updated || updated === 'last_admin') throw Errors.userNotFound(user.id);
    this.store.deleteSessionsOf(user.id, auth.sessionId);
    return userView(updated);
  }

  // ---- first admin ----

  /** No user exists: the sign-in page offers the set-up form. */
  setupRequired(): boolean {
    return this.store.count() === 0;
  }

  /**
   * A one-time code for the first admin, made when no user exists (the daemon prints it at start). It stays
   * valid until a user exists, however that user was created; null when one exists already.
   */
  issueSetupCode(): string | null {
    if (!this.setupRequired()) return (this.setupCode = null);
    return (this.setupCode ??= newSetupCode());
  }

  /** Creates the first admin with the set-up code and signs it in. */
  async setUp(code: string, username: string, password: string, client: ClientInfo): Promise<SignedIn> {
    if (!this.setupCode || !this.setupRequired()) throw Errors.setupNotAvailable();
    if (!setupCodeMatches(this.setupCode, code)) throw Errors.setupCodeInvalid();
    const row = await this.insert({ username, password, role: 'admin' }, true);
    this.setupCode = null;
    return this.openSession(row, client);
  }

  // ---- sessions ----

  /** Checks the password and opens a session; a wrong name and a wrong password are one answer, in one time. */
  async signIn(username: string, password: string, client: ClientInfo): Promise<SignedIn> {
    const user = this.store.byName(username);
    const ok = await this.check(password, user?.password_hash ?? (await this.decoy()));
    if (!user || !ok) throw Errors.invalidCredentials();
    if (needsRehash(user.password_hash))
      this.store.replaceHash(user.id, await this.queued(() => hashPassword(password)));
    return this.openSession(user, client);
  }

  /** The session of a cookie token, or null when it is unknown, idle too long or past its end. */
  authenticate(token: string): SessionAuth | null {
    if (!token || token.length > MAX_TOKEN) return null;
    const s = this.store.sessionByDigest(tokenDigest(token));
    const now = this.now();
    if (!s || !this.live(s, now)) return null;
    if (now - s.last_seen_ms >= TOUCH_EVERY_MS) this.store.touchSession(s.id, iso(now), now);
    return { sessionId: s.id, userId: s.user_id, username: s.username, role: s.role };
  }

  /** Whether a session still holds (an open preview asks every second). */
  sessionValid(sessionId: string): boolean {
    const s = this.store.session(sessionId);
    return s !== null && this.live(s, this.now());
  }

  /** Active sessions, newest first: one user's, or everyone's (userId null). */
  sessions(userId: string | null, currentSessionId: string | null): SessionT[] {
    return this.store
      .sessions(userId, this.now(), this.policy.idleMs)
      .map((s) => this.sessionView(s, currentSessionId));
  }

  /** Ends a session. `owner`: only if it belongs to this user (others' sessions are "not found" to them). */
  revokeSession(sessionId: string, owner: string | null): SessionT {
    const s = this.store.session(sessionId);
    if (!s || !this.live(s, this.now()) || (owner !== null && s.user_id !== owner))
      throw Errors.sessionNotFound(sessionId);
    this.store.deleteSession(sessionId);
    return this.sessionView(s, null);
  }

  signOut(sessionId: string): void {
    this.store.deleteSession(sessionId);
  }

  /** The CSRF token of a session: derived from its cookie token, so nothing more is stored. */
  csrfToken(token: string): string {
    return createHmac('sha256', token).update(CSRF_LABEL).digest('base64url');
  }

  csrfMatches(token: string, presented: string): boolean {
    const expected = Buffer.from(this.csrfToken(token));
    const got = Buffer.from(presented);
    return got.length === expected.length && timingSafeEqual(got, expected);
  }

  /** Deletes sessions past their end (they already fail every check). */
  prune(): number {
    return this.store.pruneSessions(this.now(), this.policy.idleMs);
  }

  // ---- internals ----

  private live(s: SessionWithUser, now: number): boolean {
    return s.expires_ms > now && s.last_seen_ms > now - this.policy.idleMs;
  }

  private sessionView(s: SessionWithUser, currentSessionId: string | null): SessionT {
    return {
      id: s.id,
      user_id: s.user_id,
      username: s.username,
      role: s.role,
      created_at: s.created_at,
      last_seen_at: s.last_seen_at,
      idle_expires_at: iso(Math.min(s.last_seen_ms + this.policy.idleMs, s.expires_ms)),
      expires_at: iso(s.expires_ms),
      address: s.address,
      user_agent: s.user_agent,
      current: s.id === currentSessionId,
    };
  }

  private openSession(user: UserRow, client: ClientInfo): SignedIn {
    const now = this.now();
    const token = randomBytes(32).toString('base64url');
    const row = {
      id: randomId('ses'),
      user_id: user.id,
      created_at: iso(now),
      last_seen_at: iso(now),
      last_seen_ms: now,
      expires_ms: now + this.policy.maxMs,
      address: client.address.slice(0, 64),
      user_agent: client.userAgent.slice(0, 256),
    };
    this.store.insertSession(row, tokenDigest(token));
    this.store.signedIn(user.id, iso(now));
    const fresh = this.store.get(user.id) ?? user;
    return {
      user: userView(fresh),
      session: this.sessionView({ ...row, username: user.username, role: user.role }, row.id),
      token,
      csrfToken: this.csrfToken(token),
    };
  }

  private async insert(input: { username: string; password: string; role: RoleT }, firstUser: boolean) {
    const hash = await this.newHash(input.password, input.username);
    const at = iso(this.now());
    const row: UserRow = {
      id: randomId('usr'),
      username: input.username,
      role: input.role,
      password_hash: hash,
      created_at: at,
      updated_at: at,
      password_changed_at: at,
      last_sign_in_at: null,
    };
    const outcome = this.store.insert(row, firstUser);
    if (outcome === 'exists') throw Errors.userExists(input.username);
    if (outcome === 'not_empty') throw Errors.setupNotAvailable();
    return row;
  }

  private async newHash(password: string, username: string): Promise<string> {
    const problem = passwordProblem(password, username);
    if (problem) throw Errors.invalidPassword(problem, PASSWORD_PROBLEM_TEXT[problem]);
    return this.queued(() => hashPassword(password));
  }

  private check(password: string, hash: string): Promise<boolean> {
    return this.queued(() => verifyPassword(password, hash));
  }

  private decoy(): Promise<string> {
    return (this.decoyHash ??= this.queued(() => hashPassword(randomBytes(16).toString('hex'))));
  }

  private queued<T>(work: () => Promise<T>): Promise<T> {
    const run = this.hashQueue.then(work);
    this.hashQueue = run.catch(() => undefined);
    return run;
  }
}
