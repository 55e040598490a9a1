import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (standardwebhooks.com): the secret is `whsec_` + base64 of 24-64 random
 * bytes; each attempt sends `webhook-id` (the message id, stable across retries), `webhook-timestamp`
 * (Unix seconds of the attempt) and `webhook-signature` = `v1,` + base64(HMAC-SHA256(secret bytes,
 * `${id}.${timestamp}.${body}`)). Receivers verify with any Standard Webhooks library.
 */
export const SECRET_PREFIX = 'whsec_';

/** A new endpoint secret (32 random bytes). */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** The key bytes of a `whsec_` secret. */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** `v1,<base64 signature>` of one attempt. */
export function signWebhook(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret))
    .update(`${messageId}.${timestampSeconds}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}

/** The three headers of one attempt. */
export function webhookHeaders(
  secret: string,
  messageId: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signWebhook(secret, messageId, timestampSeconds, body),
  };
}
