import { z } from 'zod';
import { requestId, schemaId as id } from './common.js';
import { ID_PATTERN } from './collections.js';

/** Preview-only kiosk tokens (Vigil extension, /v1/kiosk-tokens). */
export const KioskTokenCreate = z
  .strictObject({
    monitor_ids: z
      .array(z.string().refine((v) => ID_PATTERN.test(v), 'monitor ids match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'))
      .min(1)
      .max(32),
    label: z.string().max(200).default(''),
  })
  .meta(id('KioskTokenCreate'));
export type KioskTokenCreateT = z.infer<typeof KioskTokenCreate>;

export const KioskToken = z
  .looseObject({
    id: z.string(),
    label: z.string(),
    prefix: z.string().describe('The first characters of the token, to recognise it in lists.'),
    monitor_ids: z.array(z.string()),
    created_at: z.string(),
    last_used_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
  })
  .meta(id('KioskToken'));

export const KioskTokenCreatedResponse = z
  .looseObject({
    request_id: requestId,
    kiosk_token: KioskToken,
    token: z.string().describe('The token (vk_…), shown only here; only its hash is stored.'),
    kiosk_paths: z
      .record(z.string(), z.string())
      .describe(
        'Per monitor, the kiosk page path with the token in the URL fragment (never sent to the server or logged): /kiosk/<monitor_id>#token=vk_…',
      ),
  })
  .meta(id('KioskTokenCreatedResponse'));
export const KioskTokenListResponse = z
  .looseObject({ request_id: requestId, kiosk_tokens: z.array(KioskToken) })
  .meta(id('KioskTokenListResponse'));
export const KioskTokenResponse = z
  .looseObject({ request_id: requestId, kiosk_token: KioskToken })
  .meta(id('KioskTokenResponse'));
