import { createHmac, randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type { Db } from '../store/database.js';

const scryptAsync = promisify(scrypt) as (pw: string, salt: Buffer, len: number, opts: { N: number; r: number; p: number; maxmem: number }) => Promise<Buffer>;
// The upstream parameters (n=2^14, r=8, p=1, 32-byte digest, 16-byte salt).
const PARAMS = { N: 2 ** 14, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const DIGEST_BYTES = 32;

interface KeyRow { id: number; salt: Buffer; digest: Buffer }

/**
 * The face API key, stored only as a salted scrypt digest. scrypt costs ~50 ms of CPU on purpose, so a
 * key that verified once is remembered as an HMAC under a per-process secret: later requests cost
 * microseconds, and the plain key still never sits in memory.
 */
export class ApiKeyStore {
  private readonly processSecret = randomBytes(32);
  private verified: { keyId: number; mac: Buffer } | null = null;

  constructor(private readonly db: Db) {}

  /** Makes `key` the active key. The same key again is a no-op; a different one rotates atomically. */
  ensureKey(key: string, label = 'startup'): 'unchanged' | 'created' | 'rotated' {
    const active = this.activeKey();
    if (active && this.matches(key, active)) return 'unchanged';
    const salt = randomBytes(16);
    const digest = scryptSync(key, salt, DIGEST_BYTES, PARAMS);
    this.db.transaction(() => {
      this.db.prepare('UPDATE api_keys SET active = 0 WHERE active = 1').run();
      this.db.prepare('INSERT INTO api_keys (label, salt, digest, active, created_at) VALUES (?, ?, ?, 1, ?)').run(label, salt, digest, new Date().toISOString());
    })();
    this.verified = null;
    return active ? 'rotated' : 'created';
  }

  hasActiveKey(): boolean {
    return this.activeKey() !== null;
  }

  /** Constant-time verification of a presented key against the active digest. */
  async verify(presented: string): Promise<boolean> {
    const active = this.activeKey();
    if (!active) return false;
    const mac = createHmac('sha256', this.processSecret).update(presented).digest();
    if (this.verified && this.verified.keyId === active.id) return timingSafeEqual(mac, this.verified.mac);
    const digest = await scryptAsync(presented, active.salt, DIGEST_BYTES, PARAMS);
    const ok = timingSafeEqual(digest, active.digest);
    if (ok) this.verified = { keyId: active.id, mac };
    return ok;
  }

  private matches(key: string, row: KeyRow): boolean {
    return timingSafeEqual(scryptSync(key, row.salt, DIGEST_BYTES, PARAMS), row.digest);
  }

  private activeKey(): KeyRow | null {
    return (this.db.prepare('SELECT id, salt, digest FROM api_keys WHERE active = 1 ORDER BY id DESC LIMIT 1').get() as KeyRow | undefined) ?? null;
  }
}
