import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readOrCreateSecretKey } from '../store/secretKeyFile.js';
import { Errors } from '../contract/errors.js';

const PREFIX = 'v1.';

/**
 * AES-256-GCM for monitor source URLs (they may hold camera passwords): `v1.` + base64url(nonce12 +
 * ciphertext + tag16), with AAD `monitor:{id}` so a ciphertext cannot be moved to another monitor's row.
 */
export class CredentialCipher {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the monitor credential key must be 32 bytes');
  }

  /** Reads <dataDir>/monitor-credentials.key, creating it (0600, O_EXCL) with 32 random bytes on first start. */
  static open(dataDir: string): CredentialCipher {
    const path = join(dataDir, 'monitor-credentials.key');
    const key = readOrCreateSecretKey(path);
    if (key.length !== 32) {
      throw Errors.monitorKeyInvalid(path);
    }
    return new CredentialCipher(key);
  }

  static aad(monitorId: string): Buffer {
    return Buffer.from(`monitor:${monitorId}`, 'utf8');
  }

  encrypt(plain: string, monitorId: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(CredentialCipher.aad(monitorId));
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return PREFIX + Buffer.concat([nonce, ct]).toString('base64url');
  }

  /** Throws when the token is malformed, tampered with, from another monitor, or made with another key. */
  decrypt(token: string, monitorId: string): string {
    if (!token.startsWith(PREFIX)) throw new Error('unknown monitor credential format');
    const raw = Buffer.from(token.slice(PREFIX.length), 'base64url');
    if (raw.length < 12 + 16) throw new Error('monitor credential token is too short');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAAD(CredentialCipher.aad(monitorId));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8');
  }
}
