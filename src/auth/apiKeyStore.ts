import { createHmac, randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type Database from 'better-sqlite3';
import type { Db } from '../store/database.js';

const scryptAsync = promisify(scrypt) as (
  pw: string,
  salt: Buffer,
  len: number,
  opts: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;
// The upstream parameters (n=2^14, r=8, p=1, 32-byte digest, 16-byte salt).
const PARAMS = { N: 2 ** 14, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const DIGEST_BYTES = 32;

interface KeyRow {
  id: number;
  salt: Buffer;
  digest: Buffer;
}

/** How many rejected keys are remembered (as keyed hashes) so that trying one again costs no scrypt. */
const REJECTED_CACHE = 4096;

/**
 * The face API key, stored only as a salted scrypt digest. scrypt costs ~35 ms and 16 MiB on purpose, so
 * no request may trigger it when that can be avoided: the key the daemon is started with is verified once
 * at start-up and remembered as an HMAC under a per-process random secret. A presented key then costs one
 * HMAC-SHA256 and a constant-time compare, accepted or rejected, and the plain key never sits in memory.
 * Only a daemon started without the key (the digest was stored by an earlier start) still needs scrypt for
 * the first correct key; those checks run one at a time, and a rejected key's HMAC is remembered.
 */
export class ApiKeyStore {
  private readonly processSecret = randomBytes(32);
  private verified: { keyId: number; mac: Buffer } | null = null;
  private readonly rejected = new Map<string, number>();
  private scryptQueue: Promise<unknown> = Promise.resolve();
  /** How many presented keys needed scrypt in this process (0 while the fast path holds). */
  scryptVerifications = 0;

  private readonly activeStmt: Database.Statement<[], unknown>;

  constructor(private readonly db: Db) {
    this.activeStmt = db.prepare('SELECT id, salt, digest FROM api_keys WHERE active = 1 ORDER BY id DESC LIMIT 1');
  }

  /** Makes `key` the active key. The same key again is a no-op; a different one rotates atomically. */
  ensureKey(key: string, label = 'startup'): 'unchanged' | 'created' | 'rotated' {
    const active = this.activeKey();
    if (active && this.matches(key, active)) {
      this.remember(active.id, key);
      return 'unchanged';
    }
    const salt = randomBytes(16);
    const digest = scryptSync(key, salt, DIGEST_BYTES, PARAMS);
    const id = this.db.transaction(() => {
      this.db.prepare('UPDATE api_keys SET active = 0 WHERE active = 1').run();
      return Number(
        this.db
          .prepare('INSERT INTO api_keys (label, salt, digest, active, created_at) VALUES (?, ?, ?, 1, ?)')
          .run(label, salt, digest, new Date().toISOString()).lastInsertRowid,
      );
    })();
    this.remember(id, key);
    return active ? 'rotated' : 'created';
  }

  /** A check that holds while the key active now stays the active one: a stream opened with it ends when the key is rotated. */
  activeKeyCheck(): () => boolean {
    const id = this.activeKey()?.id ?? null;
    return () => id !== null && this.activeKey()?.id === id;
  }

  /** The row id of the active key (the audit log names the key by it: "api key #3"). */
  activeKeyId(): number | null {
    return this.activeKey()?.id ?? null;
  }

  hasActiveKey(): boolean {
    return this.activeKey() !== null;
  }

  /** Whether a presented key is checked without scrypt (the active key was verified by this process). */
  get fastPath(): boolean {
    const active = this.activeKey();
    return active !== null && this.verified?.keyId === active.id;
  }

  /** Constant-time verification of a presented key against the active digest. */
  async verify(presented: string): Promise<boolean> {
    const active = this.activeKey();
    if (!active) return false;
    const mac = this.mac(presented);
    if (this.verified && this.verified.keyId === active.id) return timingSafeEqual(mac, this.verified.mac);
    const tag = `${active.id}:${mac.toString('base64')}`;
    if (this.rejected.has(tag)) return false;
    // One scrypt at a time: a burst of wrong keys queues instead of taking every core and 16 MiB each.
    this.scryptVerifications++;
    const run = this.scryptQueue.then(() => scryptAsync(presented, active.salt, DIGEST_BYTES, PARAMS));
    this.scryptQueue = run.catch(() => undefined);
    const ok = timingSafeEqual(await run, active.digest);
    if (ok) {
      this.verified = { keyId: active.id, mac };
      this.rejected.clear();
    } else {
      this.rejected.set(tag, 1);
      if (this.rejected.size > REJECTED_CACHE) this.rejected.delete(this.rejected.keys().next().value!);
    }
    return ok;
  }

  private mac(key: string): Buffer {
    return createHmac('sha256', this.processSecret).update(key).digest();
  }

  private remember(keyId: number, key: string): void {
    this.verified = { keyId, mac: this.mac(key) };
    this.rejected.clear();
  }

  private matches(key: string, row: KeyRow): boolean {
    return timingSafeEqual(scryptSync(key, row.salt, DIGEST_BYTES, PARAMS), row.digest);
  }

  private activeKey(): KeyRow | null {
    return (this.activeStmt.get() as KeyRow | undefined) ?? null;
  }
}
