import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password hashes: scrypt (memory-hard, in Node without a dependency) with a per-user 16-byte salt, kept as
 * one versioned string that names its own parameters, so the cost can be raised later and old hashes still
 * verify (and are re-hashed at the next sign-in: needsRehash):
 *
 *   $scrypt$v=1$n=32768,r=8,p=1$<salt, base64 without padding>$<32-byte key, base64 without padding>
 *
 * N=2^15, r=8 takes 32 MiB and a fraction of a second per check (0.3 s measured on a busy 2-core box): a stolen
 * database costs an attacker that much per guess, a sign-in costs it once.
 */
export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

export const CURRENT_PARAMS: ScryptParams = { N: 2 ** 15, r: 8, p: 1 };
const VERSION = 1;
const SALT_BYTES = 16;
const KEY_BYTES = 32;
/** Upper bounds of what a stored string may ask for, so a tampered row cannot make a check cost gigabytes. */
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 4;

/** scrypt needs 128·N·r bytes; Node refuses anything over maxmem (32 MiB by default, too little for N=2^15, r=8). */
const maxmem = (p: ScryptParams) => 128 * p.N * p.r * 2;

export interface ParsedHash {
  params: ScryptParams;
  salt: Buffer;
  key: Buffer;
}

const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');

export function formatHash(params: ScryptParams, salt: Buffer, key: Buffer): string {
  return `$scrypt$v=${VERSION}$n=${params.N},r=${params.r},p=${params.p}$${b64(salt)}$${b64(key)}`;
}

/** The parts of a stored hash, or null when it is not one this version wrote (or asks for absurd costs). */
export function parseHash(s: string): ParsedHash | null {
  const m = /^\$scrypt\$v=1\$n=(\d{1,8}),r=(\d{1,3}),p=(\d{1,2})\$([A-Za-z0-9+/]{22})\$([A-Za-z0-9+/]{43})$/.exec(s);
  if (!m) return null;
  const params = { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  const powerOfTwo = params.N >= 2 && (params.N & (params.N - 1)) === 0;
  if (!powerOfTwo || params.N > MAX_N || params.r < 1 || params.r > MAX_R || params.p < 1 || params.p > MAX_P)
    return null;
  const salt = Buffer.from(m[4]!, 'base64');
  const key = Buffer.from(m[5]!, 'base64');
  if (salt.length !== SALT_BYTES || key.length !== KEY_BYTES) return null;
  return { params, salt, key };
}

/** Passwords are compared as NFC, so the same word typed on two keyboards (composed or not) is one password. */
const normalise = (password: string) => password.normalize('NFC');

function derive(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(normalise(password), salt, KEY_BYTES, { ...params, maxmem: maxmem(params) }, (e, key) =>
      e ? reject(e) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string, params: ScryptParams = CURRENT_PARAMS): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  return formatHash(params, salt, await derive(password, salt, params));
}

/** Constant-time check of `password` against a stored hash; a hash this version cannot read never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  if (!parsed) return false;
  return timingSafeEqual(await derive(password, parsed.salt, parsed.params), parsed.key);
}

/** A hash made with other parameters than today's: re-hash it when the password is next known. */
export function needsRehash(stored: string, params: ScryptParams = CURRENT_PARAMS): boolean {
  const parsed = parseHash(stored);
  return !parsed || parsed.params.N !== params.N || parsed.params.r !== params.r || parsed.params.p !== params.p;
}
