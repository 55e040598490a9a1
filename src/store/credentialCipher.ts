import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readOrCreateSecretKey } from './secretKeyFile.js';
import { Errors } from '../contract/errors.js';

const PREFIX = 'v1.';

/** The box key's file in the data dir (its name predates webhook secrets; backups carry it as it is). */
export const BOX_KEY_FILE = 'monitor-credentials.key';

/**
 * AES-256-GCM with the box key for credentials kept in the database (monitor source URLs, which may hold
 * camera passwords; webhook signing secrets): `v1.` + base64url(nonce12 + ciphertext + tag16). The AAD
 * names the row the secret belongs to (`monitor:{id}`, `webhook:{id}`), so a ciphertext cannot be moved to
 * another row or kind of row.
 */
export class CredentialCipher {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the box credential key must be 32 bytes');
  }

  /** Reads <dataDir>/monitor-credentials.key, creating it (0600, O_EXCL) with 32 random bytes on first start. */
  static open(dataDir: string): CredentialCipher {
    const path = join(dataDir, BOX_KEY_FILE);
    const key = readOrCreateSecretKey(path);
    if (key.length !== 32) {
      throw Errors.monitorKeyInvalid(path);
    }
    return new CredentialCipher(key);
  }

  /** Whether a stored value is one of this cipher's tokens (and not a plaintext of an older version). */
  static isToken(value: string): boolean {
    return value.startsWith(PREFIX);
  }

  encrypt(plain: string, aad: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return PREFIX + Buffer.concat([nonce, ct]).toString('base64url');
  }

  /** Throws when the token is malformed, tampered with, made for another row (AAD), or made with another key. */
  decrypt(token: string, aad: string): string {
    if (!token.startsWith(PREFIX)) throw new Error('unknown credential token format');
    const raw = Buffer.from(token.slice(PREFIX.length), 'base64url');
    if (raw.length < 12 + 16) throw new Error('credential token is too short');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8');
  }
}
