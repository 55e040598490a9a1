import { z } from 'zod';
import { requestId, schemaId as id } from './common.js';
import { RTSP_CAUSES } from './monitors.js';

/**
 * The settings API (GET/PATCH /v1/settings, a Vigil extension) and the camera set-up helpers (connection
 * test, decode pipelines). Keys are server.toml's, dotted: `mqtt.url` is `url` under `[mqtt]`.
 */

const settingKey = z.string().regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/, 'a key is section.name, e.g. mqtt.url');

export const SettingEntry = z
  .looseObject({
    key: settingKey.describe('Dotted key, e.g. mqtt.url ([mqtt] url in server.toml).'),
    section: z.string().describe('The TOML table it lives in, e.g. mqtt or scrapers.forum.'),
    description: z.string(),
    schema: z
      .record(z.string(), z.unknown())
      .describe('JSON Schema of the value: type, enum, minimum/maximum, pattern (what a form needs).'),
    default: z.unknown().describe('The default, null for an optional key absent by default.'),
    value: z
      .unknown()
      .describe('What the daemon runs with; null for a secret (see is_set); URLs are shown without credentials.'),
    source: z
      .enum(['file', 'env', 'default'])
      .describe('Where the value comes from: the config file, an environment variable (env), or the default.'),
    env: z.string().nullable().describe('The environment variable that sets it, when one does.'),
    secret: z.boolean().describe('A credential: never returned, never written through the API.'),
    is_set: z.boolean(),
    editable: z.boolean().describe('PATCH /v1/settings and `vigil config set` may change it.'),
    apply: z
      .enum(['live', 'restart'])
      .describe('live: a change takes effect at once; restart: at the next start of the service.'),
    reason: z.string().nullable().describe('Why it is not editable here, and where to change it.'),
    restart_pending: z
      .boolean()
      .describe('The file holds another value than the running one (configured_value): it waits for a restart.'),
    configured_value: z.unknown().optional(),
  })
  .meta(id('SettingEntry'));

export const SettingsResponse = z
  .looseObject({
    request_id: requestId,
    config_file: z.string().nullable(),
    writable: z.boolean().describe('Whether changes can be saved; problem says why not.'),
    problem: z.looseObject({ code: z.string(), message: z.string() }).nullable(),
    settings: z.array(SettingEntry),
  })
  .meta(id('SettingsResponse'));

export const SettingsPatch = z
  .record(settingKey, z.unknown())
  .refine((o) => Object.keys(o).length > 0, 'give at least one key')
  .describe(
    'Dotted keys and their new values, e.g. {"mqtt.enabled": true, "mqtt.url": "mqtt://broker.lan:1883"}; null removes the key from the file (its default applies). All or nothing.',
  )
  .meta(id('SettingsPatch'));

export const SettingOutcome = z
  .looseObject({
    applied: z.boolean().describe('The running daemon uses the new value now.'),
    restart_required: z.boolean().describe('Saved in the file; the service uses it after a restart.'),
    reason: z.string().nullable(),
  })
  .meta(id('SettingOutcome'));

export const SettingsPatchResponse = z
  .looseObject({
    request_id: requestId,
    results: z.record(z.string(), SettingOutcome).describe('Per key of the request.'),
    restart_required: z.boolean().describe('Some key waits for a restart.'),
    settings: z.array(SettingEntry).describe('The changed keys as GET /v1/settings shows them now.'),
  })
  .meta(id('SettingsPatchResponse'));

export const MonitorPipeline = z
  .looseObject({
    id: z.string().describe('Give it as monitors.pipeline (PATCH /v1/settings) or as pipeline of a connection test.'),
    label: z.string(),
    description: z.string(),
    pipeline: z.string().describe('The GStreamer template.'),
    decoder: z.string(),
    available: z.boolean().describe('Every element of the template is installed on this box.'),
    problem: z.string().nullable().describe("GStreamer's reason when it is not available."),
    current: z.boolean().describe('[monitors] pipeline is this template now.'),
  })
  .meta(id('MonitorPipeline'));

export const MonitorPipelinesResponse = z
  .looseObject({
    request_id: requestId,
    current: z.string().describe('The id of the running template, or custom.'),
    pipelines: z.array(MonitorPipeline),
  })
  .meta(id('MonitorPipelinesResponse'));

const testTimeout = z
  .number()
  .min(1)
  .max(60)
  .default(10)
  .describe('Seconds the whole test may take (probe, then the first decoded frame).');

export const MonitorTestRequest = z
  .strictObject({
    source: z
      .strictObject({ type: z.literal('rtsp').default('rtsp'), url: z.string().min(8).max(2048) })
      .describe("As a monitor's source: the camera URL with its credentials (never stored by the test)."),
    pipeline: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe('A pipeline id (software, jetson, vaapi, v4l2) or template to try; default [monitors] pipeline.'),
    timeout_seconds: testTimeout,
  })
  .meta(id('MonitorTestRequest'));

export const MonitorStoredTestRequest = z
  .strictObject({ pipeline: MonitorTestRequest.shape.pipeline, timeout_seconds: testTimeout })
  .meta(id('MonitorStoredTestRequest'));

export const MonitorTestResult = z
  .looseObject({
    ok: z.boolean().describe('A frame was decoded.'),
    stage: z
      .enum(['url', 'probe', 'pipeline', 'frame'])
      .describe('How far it got: url (refused as written), probe (DNS, connect, DESCRIBE), pipeline, frame (done).'),
    cause: z.enum(RTSP_CAUSES).nullable().describe('Why the camera cannot be read, as a monitor reports it.'),
    message: z.string(),
    source: z.string().describe('The URL without credentials.'),
    pipeline: z.string().describe('The pipeline id, or custom.'),
    elapsed_ms: z.number(),
    frame: z.looseObject({ width: z.number(), height: z.number() }).nullable(),
    snapshot: z
      .looseObject({ content_type: z.literal('image/jpeg'), data_base64: z.string() })
      .nullable()
      .describe('The first decoded frame as a JPEG (base64), at most [monitors] frame_max_side.'),
  })
  .meta(id('MonitorTestResult'));

export const MonitorTestResponse = z
  .looseObject({ request_id: requestId, test: MonitorTestResult })
  .meta(id('MonitorTestResponse'));

export type SettingEntryT = z.infer<typeof SettingEntry>;
export type MonitorTestRequestT = z.infer<typeof MonitorTestRequest>;
export type MonitorTestResultT = z.infer<typeof MonitorTestResult>;
