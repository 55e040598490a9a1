import { isIP } from 'node:net';
import { z } from 'zod';
import { SEARCH_PROFILES } from '../contract/collections.js';
import { VERSION } from '../contract/version.js';

/**
 * server.toml. Every section is a strict object, so an unknown key is a startup error that names it.
 * Defaults mirror the upstream 0.3.x shipped file where a key exists there.
 *
 * This schema is the single source of the configuration's documentation: every key's `.describe()` (or
 * `.meta()`) text, type, range and default become docs/configuration.md and config/server.example.toml
 * (`npm run docs:generate`, scripts/config-reference.ts; test/unit/generated-docs.test.ts fails when they are
 * stale). Meta keys the generator reads besides `description`: `examples` (the value shown, commented out, for
 * an optional key), `commented` (a key with a default shown commented out) and `defaultText` (the default as
 * words, when the value depends on the build).
 */
const inputSize = z.tuple([z.number().int(), z.number().int()]);

export const DetectionConfigSchema = z
  .strictObject({
    input_sizes: z
      .array(inputSize)
      .min(1)
      .max(4)
      .default([
        [96, 96],
        [512, 512],
      ])
      .describe(
        'Detector input sizes, each [width, height]: 1 to 4 sizes, sides multiples of 32 from 32 to 2048, at most 4 Mpx together. Every size runs over the image and one NMS merges their faces; a larger size finds smaller faces (docs/recognition-quality.md).',
      ),
    threshold: z.number().min(0).max(1).default(0.5).describe('Detection score below which a face is dropped.'),
    nms_threshold: z
      .number()
      .min(0)
      .max(1)
      .default(0.4)
      .describe(
        'IoU above which overlapping detections are merged (one global NMS over the candidates of every size).',
      ),
    single_face_selection: z
      .enum(['largest', 'center_largest'])
      .default('largest')
      .describe(
        'Which face a single-face request (search, compare, embeddings) uses: the largest, or the largest near the centre.',
      ),
    max_detected_faces: z.number().int().min(1).max(100).default(100).describe('Faces kept per image at most.'),
  })
  .superRefine((d, ctx) => {
    const problem = inputSizesProblem(d.input_sizes);
    if (problem) ctx.addIssue({ code: 'custom', path: ['input_sizes'], message: problem });
  });

/** Rules shared by the config file and per-collection detection profiles. */
export function inputSizesProblem(sizes: [number, number][]): string | null {
  const seen = new Set<string>();
  let area = 0;
  for (const [w, h] of sizes) {
    for (const side of [w, h]) {
      if (side < 32 || side > 2048 || side % 32 !== 0)
        return `input size sides must be multiples of 32 between 32 and 2048 (got ${w}x${h})`;
    }
    const key = `${w}x${h}`;
    if (seen.has(key)) return `duplicate input size ${key}`;
    seen.add(key);
    area += w * h;
  }
  if (area > 4 * 1024 * 1024) return 'the input sizes add up to more than 4*1024*1024 pixels';
  return null;
}

/** Shared by the file and VIGIL_API_KEY so both get the same rule. */
export const ApiKeySchema = z
  .string()
  .min(16, 'the API key must be at least 16 characters')
  .regex(/^[\x21-\x7e]+$/, 'the API key must be printable ASCII without spaces');

/** Scrapers (workspaces, metering, the background worker), the forum (Reddit) client and the places (Google Maps) client. */
export const ScrapersConfigSchema = z.strictObject({
  free_items_per_month: z
    .int()
    .min(0)
    .default(1000)
    .describe(
      'Monthly items per workspace (one returned item = one unit) unless the workspace has its own quota (`vigil workspaces create --quota`).',
    ),
  free_reviews_per_month: z
    .int()
    .min(0)
    .default(10_000)
    .describe(
      'Monthly reviews per workspace (places scraper: one delivered review = one unit, metered apart from items).',
    ),
  max_queued_runs: z
    .int()
    .min(1)
    .max(10_000)
    .default(32)
    .describe('Runs queued or running at once across workspaces; more is 503 scrape_queue_full.'),
  max_concurrent_runs: z
    .int()
    .min(1)
    .max(16)
    .default(2)
    .describe('Runs executing at once in the scrape worker process.'),
  worker_nice: z
    .int()
    .min(0)
    .max(19)
    .default(19)
    .describe('Nice value of the scrape worker process (19 = lowest priority), so face inference keeps the CPU.'),
  sync_wait_seconds: z
    .number()
    .positive()
    .max(3600)
    .default(50)
    .describe(
      'A synchronous scrape waits this long (capped below [server] request_timeout_seconds), then answers 202 with the run.',
    ),
  result_retention_hours: z
    .number()
    .positive()
    .default(48)
    .describe(
      'Scraped items of finished runs are deleted after this (Reddit asks for deletions to propagate within 48 h); counts and billing stay.',
    ),
  seen_items_per_kind: z
    .int()
    .min(100)
    .max(10_000_000)
    .default(100_000)
    .describe(
      'The only_new seen-set: item keys remembered per workspace and scraper kind; past it the least recently delivered are forgotten.',
    ),
  mcp_tool_names: z
    .enum(['underscore', 'dotted'])
    .default('underscore')
    .describe(
      'MCP tool names: underscore (forum_scrape, what Claude and OpenAI clients accept) or dotted (forum.scrape). Both are callable.',
    ),
  forum: z
    .strictObject({
      enabled: z.boolean().default(true).describe('The forum (Reddit) scraper is offered.'),
      auth_mode: z
        .enum(['oauth', 'anonymous'])
        .default('oauth')
        .describe(
          'oauth: app-only client credentials (the supported path); anonymous: www.reddit.com/*.json, blocked from most networks since 2026.',
        ),
      client_id: z
        .string()
        .min(1)
        .optional()
        .meta({
          description: "The Reddit app's client id; prefer VIGIL_REDDIT_CLIENT_ID in the environment.",
          examples: ['your-client-id'],
        }),
      client_secret: z
        .string()
        .min(1)
        .optional()
        .meta({
          description: "The Reddit app's client secret; prefer VIGIL_REDDIT_CLIENT_SECRET in the environment.",
          examples: ['your-client-secret'],
        }),
      api_base_url: z.url().default('https://oauth.reddit.com').describe('Base URL of the OAuth API.'),
      token_url: z
        .url()
        .default('https://www.reddit.com/api/v1/access_token')
        .describe('Where the app-only token is fetched.'),
      anonymous_base_url: z.url().default('https://www.reddit.com').describe('Base URL of auth_mode = "anonymous".'),
      user_agent: z.string().min(1).default(`server:vigil:v${VERSION} (self-hosted)`).meta({
        description: 'User-Agent header; Reddit asks for <platform>:<app id>:<version> (by /u/<you>).',
        commented: true,
        defaultText: 'server:vigil:v<version> (self-hosted)',
      }),
      requests_per_minute: z
        .number()
        .positive()
        .max(60_000)
        .default(100)
        .describe('Reddit allows 100 per minute per OAuth client id (10 anonymous), averaged over 10 minutes.'),
      burst: z.int().min(1).max(1000).default(10).describe('Requests the token bucket lets through at once.'),
      request_timeout_seconds: z.number().positive().max(300).default(20).describe('Per request.'),
      max_retries: z
        .int()
        .min(0)
        .max(5)
        .default(2)
        .describe('Retries of a 429 (honouring retry-after), a 5xx or a timeout.'),
      retry_backoff_ms: z
        .int()
        .min(0)
        .max(60_000)
        .default(1000)
        .describe('Base of the jittered backoff between retries: 0-2 s, then 2-4 s at 1000.'),
      max_retry_wait_seconds: z
        .number()
        .min(0)
        .max(3600)
        .default(60)
        .describe('A 429 asking to wait longer than this fails the source instead of holding the run.'),
      blocked_cooldown_seconds: z
        .number()
        .min(0)
        .max(86_400)
        .default(3600)
        .describe('After an HTML "blocked" page, requests with this credential stop for this long.'),
      max_more_requests_per_post: z
        .int()
        .min(0)
        .max(1000)
        .default(32)
        .describe(
          '"load more comments" / "continue this thread" expansions per post (PRAW\'s replace_more default is 32).',
        ),
    })
    .prefault({})
    .describe('The forum scraper: its Reddit client and rate limits (docs/scrapers/forum.md).'),
  places: z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe(
          "Per-deployment kill switch: Google's terms prohibit automated access to Maps; the operator decides.",
        ),
      base_url: z
        .url()
        .default('https://www.google.com')
        .describe(
          'Search (/search?tbm=map), place pages (/maps/place, /maps?cid=), preview JSON and reviews (/maps/rpc) are all under this base.',
        ),
      user_agent: z
        .string()
        .min(1)
        .default(
          'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36',
        )
        .describe("User-Agent header (a current desktop browser's)."),
      cookie: z
        .string()
        .min(1)
        .optional()
        .meta({
          description:
            'Cookie header for every request: a SOCS consent cookie (EU consent wall), or a signed-in session for reviews. Prefer VIGIL_PLACES_COOKIE.',
          examples: ['SOCS=…'],
        }),
      proxy_url: z
        .url({ protocol: /^https?$/ })
        .optional()
        .meta({
          description:
            'HTTP(S) proxy, http://user:pass@host:port (tunnelled with CONNECT). Prefer VIGIL_PLACES_PROXY_URL.',
          examples: ['http://user:pass@proxy:3128'],
        }),
      requests_per_minute: z
        .number()
        .positive()
        .max(60_000)
        .default(30)
        .describe(
          'Google tolerates little from one IP: a slow token bucket per egress (direct or proxy), plus 0..jitter_ms per request.',
        ),
      burst: z.int().min(1).max(1000).default(3).describe('Requests the token bucket lets through at once.'),
      jitter_ms: z.int().min(0).max(60_000).default(1000).describe('A random 0..jitter_ms wait before each request.'),
      request_timeout_seconds: z.number().positive().max(300).default(20).describe('Per request.'),
      max_retries: z
        .int()
        .min(0)
        .max(5)
        .default(2)
        .describe('Retries of a 5xx, a 408, a timeout or a connection reset (never of consent or "sorry" pages).'),
      retry_backoff_ms: z
        .int()
        .min(0)
        .max(60_000)
        .default(1000)
        .describe('Base of the jittered backoff between retries: 0-2 s, then 2-4 s at 1000.'),
      blocked_cooldown_seconds: z
        .number()
        .min(0)
        .max(86_400)
        .default(900)
        .describe(
          'After a consent wall or an "unusual traffic" page, requests stop for this long (they fail fast with that problem).',
        ),
      max_search_pages: z
        .int()
        .min(1)
        .max(50)
        .default(10)
        .describe('Result pages per search (20 places each); Google stops near 120 places per search anyway.'),
    })
    .prefault({})
    .describe('The places scraper: HTTP only, no browser (docs/scrapers/places.md).'),
});

/**
 * rtspsrc -> decode -> drop to the rate inference uses -> scale to at most frame_max_side -> RGB ->
 * appsink keeping only the newest frame. `videorate drop-only=true max-rate={max_fps}` drops surplus
 * frames right after the decoder, so colour conversion, scaling and the copy into JavaScript happen
 * only for frames the monitor will use (5 of 25 at 5 inference fps), and `videoscale` works on the
 * decoder's YUV before conversion. `{max_fps}` is the monitor's inference rate (or the preview's when
 * enabled and higher) rounded up, plus one (see MonitorSession), `{max_side}` is [monitors] frame_max_side.
 * The URL is never spliced into this string: it is set as the `location` property of the element named
 * `src`, so it cannot inject elements. A `tee` after the rate limiter feeds a second, tiny branch: the
 * frame scaled to {motion_height} rows ([monitors.motion] frame_height) and GRAY8, into the appsink named
 * `motion` that the motion gate reads (no queues: both branches run in the decoder's thread, so the grey
 * frame of a moment is there when its RGB frame is pulled; `async=false` on both appsinks, or the first
 * one would wait in preroll for the second with the one thread blocked). A template without it runs ungated.
 */
export const DEFAULT_MONITOR_PIPELINE =
  'rtspsrc name=src latency={latency_ms} protocols=tcp ! {record}decodebin ! videorate name=rate drop-only=true max-rate={max_fps} ! tee name=split ! videoscale ! video/x-raw,width=[1,{max_side}],height=[1,{max_side}],pixel-aspect-ratio=1/1 ! videoconvert ! video/x-raw,format=RGB ! appsink name=sink max-buffers=1 drop=true sync=false async=false split. ! videoscale ! video/x-raw,height={motion_height},pixel-aspect-ratio=1/1 ! videoconvert ! video/x-raw,format=GRAY8 ! appsink name=motion max-buffers=1 drop=true sync=false async=false';

/** What the monitor pipeline template must contain for FrameSource to drive it. */
export function pipelineProblem(p: string): string | null {
  if (!/\bname=src\b/.test(p))
    return 'the monitor pipeline needs the RTSP source element named src (its location is set from the monitor URL)';
  if (!/appsink\b[^!]*\bname=sink\b/.test(p)) return 'the monitor pipeline must end in "appsink name=sink"';
  if (!/format=RGB\b/.test(p)) return 'the monitor pipeline must deliver video/x-raw,format=RGB to the appsink';
  if (/appsink\b[^!]*\bname=motion\b/.test(p) && !/format=GRAY8\b/.test(p))
    return 'the motion branch of the monitor pipeline must deliver video/x-raw,format=GRAY8 to the appsink named motion';
  return null;
}

/** [monitors.motion]: the motion gate's defaults (each monitor may override gate, threshold, min_area, keepalive). */
export const ClipsConfigSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe(
        "Record a clip around identity events (person_enter / unknown_enter to the exit, plus the pre- and post-roll) from the camera's encoded stream, without re-encoding: an MP4 under <data_dir>/events/snapshots/ (0600) kept and pruned with the event pictures ([events] retention; max_snapshot_bytes counts pictures and clips together). H.264 and H.265 cameras, with a pipeline template that has {record}. Per monitor: clips.enabled.",
      ),
    pre_seconds: z
      .number()
      .min(0)
      .max(60)
      .default(5)
      .describe(
        'Pre-roll: the clip starts at the key frame at or before this long before the enter (kept in memory: about this many seconds plus one key frame interval of the encoded stream per recording monitor). Per monitor: clips.pre_seconds.',
      ),
    post_seconds: z
      .number()
      .min(0)
      .max(300)
      .default(5)
      .describe(
        'Post-roll: recorded on this long after the last face left (the exit); a face entering meanwhile joins the clip. Per monitor: clips.post_seconds.',
      ),
    max_seconds: z
      .number()
      .min(10)
      .max(3600)
      .default(300)
      .describe('A clip ends here (end_reason capped) even while faces stay in view; the next enter starts a new one.'),
  })
  .prefault({});

export const MotionConfigSchema = z
  .strictObject({
    gate: z
      .boolean()
      .default(true)
      .describe(
        'Run the face detector only on frames where something moved (plus a keep-alive, and every frame while a new face is being confirmed); false runs it on every sampled frame as before (motion is still reported). Per monitor: motion.gate.',
      ),
    threshold: z
      .int()
      .min(1)
      .max(255)
      .default(30)
      .describe(
        'Grey-level change (0-255, after contrast stretching) above which a pixel of the motion frame moved; lower is more sensitive.',
      ),
    min_area: z
      .number()
      .min(0)
      .max(1)
      .default(0.0007)
      .describe(
        'A moving blob smaller than this share of the picture is noise (0.0007: 10 pixels of the 160x90 motion frame).',
      ),
    frame_alpha: z
      .number()
      .min(0.001)
      .max(1)
      .default(0.01)
      .describe('Weight of each motion frame in the running average of the scene that frames are compared with.'),
    improve_contrast: z
      .boolean()
      .default(true)
      .describe("Stretch each motion frame's contrast (its 4th to 96th percentile), so dim scenes still show motion."),
    frame_height: z
      .int()
      .min(16)
      .max(720)
      .default(90)
      .describe(
        'Rows of the grey motion frame ({motion_height} in pipeline; the width follows the aspect ratio: 160 for 16:9).',
      ),
    keepalive_seconds: z
      .number()
      .min(0.1)
      .max(3600)
      .default(5)
      .describe(
        'With nothing moving and no face tracked, the detector still runs this often on the whole frame (a face that came without motion: the scene at start, a sitter below the threshold). While a face is tracked it runs at least twice per absence_timeout_seconds, so a person standing still keeps their track and identity.',
      ),
    off_delay_seconds: z
      .number()
      .min(0)
      .max(3600)
      .default(30)
      .describe(
        'Motion stays on (/state motion.active, MQTT <prefix>/<monitor>/motion) this long after the last movement.',
      ),
    regions: z
      .boolean()
      .default(true)
      .describe(
        'When what moved (with the tracked faces) covers at most half of the picture, the detector runs on that region only, at the scale it has over the whole frame (less work, the same faces found); false: always the whole frame.',
      ),
  })
  .prefault({});

/** The durable event history, its snapshots and retention. */
export const EventsConfigSchema = z.strictObject({
  flush_interval_ms: z
    .int()
    .min(10)
    .max(1000)
    .default(200)
    .describe(
      'Events are written in batches at most this often (a crash loses at most this much, plus a slow snapshot).',
    ),
  snapshots: z
    .boolean()
    .default(true)
    .describe('Identity events keep a face crop and a downscaled frame JPEG under <data_dir>/events/.'),
  snapshot_max_side: z
    .int()
    .min(64)
    .max(4096)
    .default(640)
    .describe('Longest side of the frame snapshot (never upscaled).'),
  crop_margin: z
    .number()
    .min(0)
    .max(2)
    .default(0.5)
    .describe('The face crop: the face box grown by this fraction of its size on every side.'),
  crop_max_side: z.int().min(64).max(1024).default(320).describe('Longest side of the face crop.'),
  jpeg_quality: z.int().min(1).max(100).default(80).describe('JPEG quality of both pictures.'),
  max_age_days: z
    .number()
    .min(0)
    .max(36_500)
    .default(30)
    .describe('Retention, enforced in the background: events older than this are deleted (0 = no age limit).'),
  max_events: z
    .int()
    .min(0)
    .default(200_000)
    .describe('At most this many events are kept; the oldest go first (0 = no limit).'),
  max_snapshot_bytes: z
    .int()
    .min(0)
    .default(2 * 1024 ** 3)
    .describe(
      'Snapshot files take at most this many bytes: the oldest events lose their pictures first (0 = no limit).',
    ),
  retention_interval_seconds: z.number().min(1).max(86_400).default(60).describe('How often retention runs.'),
});

/** MQTT output (Frigate-style topics and Home Assistant discovery). Credentials: VIGIL_MQTT_USERNAME / VIGIL_MQTT_PASSWORD. */
export const MqttConfigSchema = z.strictObject({
  enabled: z.boolean().default(false).describe('Publish events, presence and discovery to the broker at url.'),
  url: z
    .string()
    .regex(/^(mqtts?|wss?):\/\/[^\s]+$/, 'url must be mqtt://, mqtts://, ws:// or wss://')
    .default('mqtt://127.0.0.1:1883')
    .describe('The broker: mqtt://host:1883, mqtts://host:8883 (TLS), ws:// or wss://.'),
  username: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "The broker's user; prefer VIGIL_MQTT_USERNAME in the environment.", examples: ['vigil'] }),
  password: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "The broker's password; prefer VIGIL_MQTT_PASSWORD in the environment.", examples: ['…'] }),
  client_id: z
    .string()
    .min(1)
    .max(128)
    .optional()
    .meta({
      description: 'MQTT client id, also the Home Assistant node id; absent = vigil-<hostname>.',
      examples: ['vigil-frontdoor'],
    }),
  topic_prefix: z
    .string()
    .regex(/^[^#+\s]+$/, 'topic_prefix may not contain #, + or spaces')
    .default('vigil')
    .describe('First level of every topic Vigil publishes (docs/integrations/mqtt.md).'),
  qos: z
    .union([z.literal(0), z.literal(1), z.literal(2)])
    .default(1)
    .describe('QoS of event messages (retained state topics use the same).'),
  retain: z
    .boolean()
    .default(false)
    .describe(
      'Retain the per-event messages on <prefix>/<monitor>/events (state, presence, snapshot and discovery are always retained).',
    ),
  ca_file: z
    .string()
    .min(1)
    .optional()
    .meta({
      description: 'TLS (mqtts://, wss://): a CA file for a private broker.',
      examples: ['/etc/vigil/mqtt-ca.pem'],
    }),
  cert_file: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'TLS client certificate.', examples: ['/etc/vigil/mqtt-client.pem'] }),
  key_file: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "TLS client certificate's key.", examples: ['/etc/vigil/mqtt-client.key'] }),
  tls_verify: z
    .boolean()
    .default(true)
    .describe("Verify the broker's certificate; false accepts any (a trusted LAN only)."),
  discovery: z.boolean().default(true).describe('Home Assistant MQTT discovery (docs/integrations/home-assistant.md).'),
  discovery_prefix: z
    .string()
    .regex(/^[^#+\s]+$/)
    .default('homeassistant')
    .describe("Home Assistant's discovery prefix."),
  snapshots: z
    .boolean()
    .default(true)
    .describe(
      "Publish each identity event's frame snapshot (JPEG bytes) on the retained <prefix>/<monitor>/snapshot topic.",
    ),
  queue_max_messages: z
    .int()
    .min(10)
    .max(10_000_000)
    .default(100_000)
    .describe(
      'Messages kept on disk while the broker is away; beyond this the oldest are dropped and counted (never silently).',
    ),
  reconnect_delay_seconds: z
    .number()
    .min(0.1)
    .max(300)
    .default(1)
    .describe('First reconnect delay; it doubles up to max_reconnect_delay_seconds.'),
  max_reconnect_delay_seconds: z.number().min(0.1).max(3600).default(30).describe('Longest reconnect delay.'),
  keepalive_seconds: z.int().min(5).max(3600).default(30).describe('MQTT keepalive.'),
});

/** Signed webhooks (Standard Webhooks) from the durable outbox. */
export const WebhooksConfigSchema = z.strictObject({
  timeout_seconds: z.number().min(0.5).max(120).default(10).describe('Per-attempt timeout (connect and response).'),
  first_retry_seconds: z
    .number()
    .min(0.1)
    .max(3600)
    .default(5)
    .describe('Retry delays start here and double up to max_retry_delay_seconds, each with +-jitter.'),
  max_retry_delay_seconds: z.number().min(0.1).max(86_400).default(300).describe('Longest retry delay.'),
  jitter: z.number().min(0).max(1).default(0.2).describe('A retry waits delay * (1 +- jitter).'),
  disable_after_failures: z
    .int()
    .min(0)
    .default(100)
    .describe('Consecutive failed attempts after which an endpoint is disabled (with the reason); 0 = never.'),
  max_pending_per_endpoint: z
    .int()
    .min(1)
    .default(100_000)
    .describe('Messages waiting per endpoint; beyond this the endpoint is disabled with reason backlog_full.'),
  log_size: z.int().min(10).max(100_000).default(500).describe("Attempts kept in each endpoint's delivery log."),
  max_redirects: z
    .int()
    .min(0)
    .max(10)
    .default(3)
    .describe('Same-host redirects followed per attempt (redirects to another host are never followed).'),
  allow_http: z.boolean().default(true).describe('Endpoints may use http:// (LAN receivers); false = https:// only.'),
  max_endpoints_per_workspace: z
    .int()
    .min(1)
    .max(1000)
    .default(10)
    .describe(
      'Run webhook endpoints a workspace may register (/workspaces/{id}/webhooks); more is 409 webhook_limit_reached.',
    ),
});

/**
 * Where the gallery lives. sqlite (default): the box's own file under data_dir, nothing else needed.
 * postgres (fleet mode): collections, persons and faces live in PostgreSQL; every box keeps a local
 * SQLite replica and its search indexes, and follows the database's change log.
 */
export const StoreConfigSchema = z
  .strictObject({
    backend: z
      .enum(['sqlite', 'postgres'])
      .default('sqlite')
      .describe(
        "sqlite: the box's own file under data_dir, nothing else needed; postgres: fleet mode, the gallery in PostgreSQL with a local replica (docs/operations/fleet-postgresql.md).",
      ),
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\/[^\s]+$/, 'url must be postgres://…')
      .optional()
      .meta({
        description:
          'The fleet database, required with backend = "postgres"; the password comes from VIGIL_STORE_PASSWORD or password_file, never from this file.',
        examples: ['postgres://vigil@db.lan:5432/vigil'],
      }),
    password_file: z
      .string()
      .min(1)
      .optional()
      .meta({
        description: "A file holding the database role's password (readable by the service only).",
        examples: ['/etc/vigil/store-password'],
      }),
    pool_size: z.number().int().min(1).max(100).default(8).describe('PostgreSQL connections of this box.'),
    follow_interval_seconds: z
      .number()
      .min(0.1)
      .max(3600)
      .default(5)
      .describe('Seconds between full catch-up passes of the follower (LISTEN/NOTIFY wakes it sooner).'),
    change_log_retention_seconds: z
      .number()
      .min(0)
      .max(31_536_000)
      .default(604_800)
      .describe(
        'Change-log pruning: changes every box seen within this many seconds has applied are deleted; a box away for longer copies its collections afresh when it returns. 0 = never prune.',
      ),
    change_log_prune_interval_seconds: z
      .number()
      .min(0.1)
      .max(86_400)
      .default(600)
      .describe(
        'Seconds between two prunes of the change log (one box of the fleet does each, under an advisory lock).',
      ),
  })
  .refine((s) => s.backend !== 'postgres' || s.url !== undefined, {
    message: 'store.url is required when backend = "postgres"',
    path: ['url'],
  });

const concurrency = z.union([z.literal('auto'), z.number().int().min(1).max(256)]);
const providers = z.enum(['cpu', 'cuda', 'tensorrt']);

export const ConfigSchema = z.strictObject({
  server: z
    .strictObject({
      host: z
        .string()
        .default('0.0.0.0')
        .describe('Listen address: 0.0.0.0 = every interface, 127.0.0.1 = this host only (VIGIL_HOST).'),
      port: z.number().int().min(0).max(65535).default(8080).describe('Listen port (VIGIL_PORT).'),
      data_dir: z
        .string()
        .default('/var/lib/vigil')
        .describe(
          'The SQLite database (vigil.db), its lock, the keys (cursor.key, monitor-credentials.key), event pictures and search indexes (VIGIL_DATA_DIR). A relative path is taken from the working directory.',
        ),
      models_dir: z
        .string()
        .default('/var/lib/vigil/models')
        .describe('Filled by `vigil models install <pack>`; never downloaded at startup (VIGIL_MODELS_DIR).'),
      model_catalog: z
        .string()
        .min(1)
        .optional()
        .meta({
          description: 'The model catalog (packs, addons, pinned sources); absent = the bundled models/manifest.json.',
          examples: ['/etc/vigil/manifest.json'],
        }),
      max_request_bytes: z
        .number()
        .int()
        .min(1024)
        .default(64 * 1024 * 1024)
        .describe('Largest request body, chunked bodies counted as they stream: more is 413 request_too_large.'),
      storage_reserve_bytes: z
        .number()
        .int()
        .min(0)
        .max(1024 * 1024 * 1024)
        .default(8 * 1024 * 1024)
        .describe(
          'Space kept free in data_dir and released when the disk fills, so deletes can still free space (507 while full).',
        ),
      compact_at_start_max_bytes: z
        .number()
        .int()
        .min(0)
        .default(512 * 1024 * 1024)
        .describe(
          'A database made before incremental vacuum gets it at start (one VACUUM, 50-100 MB/s) when its live data is at most this many bytes; a larger one by `vigil store compact` on the stopped box. 0: never at start.',
        ),
      max_image_bytes: z
        .number()
        .int()
        .min(1024)
        .default(10 * 1024 * 1024)
        .describe('Largest image: more is 413 image_too_large.'),
      max_image_pixels: z
        .number()
        .int()
        .min(1)
        .default(40_000_000)
        .describe('Most pixels per image, checked from the header before decoding.'),
      max_image_side: z
        .number()
        .int()
        .min(16)
        .max(2 ** 30)
        .default(16_384)
        .describe(
          'Longest image side, checked from the header before decoding (a 1 x 39,000,000 PNG passes the pixel cap): 413 image_too_large.',
        ),
      max_image_aspect_ratio: z
        .number()
        .min(1)
        .max(2 ** 30)
        .default(20)
        .describe('Long side / short side, from the header: more is 422 invalid_image (reason aspect_ratio).'),
      image_decode_timeout_seconds: z
        .number()
        .int()
        .min(1)
        .max(600)
        .default(10)
        .describe('An image decode running longer than this is stopped (422 invalid_image, reason decode_timeout).'),
      max_registration_images: z
        .number()
        .int()
        .min(1)
        .max(100)
        .default(20)
        .describe('Images per registration request.'),
      request_timeout_seconds: z
        .number()
        .positive()
        .max(3600)
        .default(60)
        .describe('A request not answered within this gets 503 request_timeout.'),
      cors_origins: z
        .array(z.string().url())
        .default([])
        .describe('Browser origins allowed by CORS, exact, e.g. ["http://kiosk.lan:8080"] (VIGIL_CORS_ORIGINS).'),
      trusted_proxies: z
        .array(z.string().refine((a) => isIP(a) !== 0, 'each trusted proxy is an IPv4 or IPv6 address'))
        .max(64)
        .default(['127.0.0.1', '::1'])
        .describe(
          'Addresses of reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed: the client address (failure throttle, sessions, audit) and HTTPS (Secure session cookie) come from them. Others are ignored (docs/operations/tls-reverse-proxy.md).',
        ),
      log_level: z
        .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
        .default('info')
        .describe('One JSON line per request at info (VIGIL_LOG_LEVEL).'),
      box_id: z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'box_id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
        .optional()
        .meta({
          description:
            "This box's name in a fleet (monitors and events carry it); absent = the hostname, or on a single box the id its data directory first ran as (VIGIL_BOX_ID).",
          examples: ['frontdoor-1'],
        }),
    })
    .prefault({})
    .describe('Listening, directories, request and image limits, logging.'),
  store: StoreConfigSchema.prefault({}).describe(
    'Where the gallery lives: this box (sqlite) or a fleet database (postgres). VIGIL_STORE_BACKEND, VIGIL_STORE_URL and VIGIL_STORE_PASSWORD override it.',
  ),
  auth: z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe('Every route but /v1/health needs the API key (VIGIL_AUTH_ENABLED); false only on a trusted bench.'),
      api_key: ApiKeySchema.optional().meta({
        description:
          'The admin API key (at least 16 printable characters). Prefer VIGIL_API_KEY in the environment; a key here is for a development box only.',
        examples: ['a-development-key-of-16+-chars'],
      }),
      max_failures: z
        .number()
        .int()
        .min(1)
        .default(20)
        .describe('Wrong keys one source address may present per window before it gets 429 until the window ends.'),
      failure_window_seconds: z.number().int().min(1).max(86_400).default(60).describe('The window of max_failures.'),
      session_idle_minutes: z
        .number()
        .int()
        .min(5)
        .max(43_200)
        .default(720)
        .describe('A browser session (password sign-in) not used for this long ends (docs/operations/users.md).'),
      session_max_hours: z
        .number()
        .int()
        .min(1)
        .max(8760)
        .default(168)
        .describe('A browser session ends this long after its sign-in, used or not.'),
    })
    .prefault({})
    .describe(
      'The API key check, user sessions and the failure throttle they share. The key itself comes from VIGIL_API_KEY (a different value on a later start rotates it); users: `vigil users add` (docs/operations/users.md).',
    ),
  audit: z
    .strictObject({
      retention_days: z
        .number()
        .int()
        .min(0)
        .max(36_500)
        .default(365)
        .describe('Audit log entries older than this are deleted (checked hourly); 0 keeps them all.'),
    })
    .prefault({})
    .describe('The audit log of who changed what, from the API, the web UI and the CLI (GET /v1/audit, admins only).'),
  inference: z
    .strictObject({
      model_pack: z
        .string()
        .default('edge_s')
        .describe(
          'The model pack: edge_s | edge_open (MIT, for commercial use) | buffalo_s | buffalo_l (docs/recognition-quality.md).',
        ),
      execution_providers: z
        .array(providers)
        .min(1)
        .default(['cpu'])
        .describe(
          'ONNX Runtime providers in order, e.g. ["tensorrt", "cuda", "cpu"] on a Jetson; every listed provider must be available, nothing falls back silently.',
        ),
      device_id: z.number().int().min(0).default(0).describe('The GPU of a GPU provider.'),
      max_concurrency: concurrency
        .default('auto')
        .describe(
          'Inference worker threads; auto = one per core on the CPU provider, one per core plus one on a GPU provider.',
        ),
      intra_op_threads: concurrency
        .default('auto')
        .describe(
          'ONNX Runtime threads per job; auto = 1 while other jobs run, and a job that runs alone gets 2 on a second set of sessions (CPU provider only). A number is used for every job.',
        ),
      jobs_per_worker: z
        .union([z.literal('auto'), z.number().int().min(1).max(4)])
        .default('auto')
        .describe(
          "Jobs one worker holds at once, so a job's decode overlaps another's models; auto = 2 on a CPU-only box of 2+ cores with max_concurrency auto, else 1.",
        ),
      graph_optimization: z
        .enum(['auto', 'basic', 'extended', 'all'])
        .default('auto')
        .describe(
          'ONNX Runtime graph optimisation; auto times extended and all per model at startup and keeps the faster.',
        ),
      default_threshold: z
        .number()
        .min(0)
        .max(1)
        .optional()
        .meta({
          description:
            "Compare's and new collections' default threshold; absent = the pack's measured recommended_threshold (edge_s 0.41, edge_open 0.37), else 0.4.",
          examples: [0.41],
        }),
      addons: z
        .array(z.enum(['liveness']))
        .default([])
        .describe(
          'Runtime addons; ["liveness"] turns the liveness check on (its models must be installed: vigil addons install liveness).',
        ),
      liveness_mode: z
        .enum(['normal', 'observe'])
        .default('normal')
        .describe('normal: a face that fails liveness gets 422 / no embedding; observe: report it and carry on.'),
      liveness_threshold: z
        .number()
        .min(0)
        .max(1)
        .default(0.8)
        .describe('A face is live (is_live) when its live_score is at least this.'),
      liveness_compare_scope: z
        .enum(['both', 'source', 'target'])
        .default('both')
        .describe('Which /v1/compare image is checked.'),
      liveness_on_registration: z
        .boolean()
        .default(false)
        .describe('Also check registration images (review_mode = off does not bypass it).'),
    })
    .prefault({})
    .describe('The model pack, the execution providers and the worker layout (leave the "auto" values), liveness.'),
  addons: z
    .strictObject({
      auto_download: z
        .array(z.enum(['liveness']))
        .default([])
        .describe('`vigil models install` also fetches these addons, even when the pack is already installed.'),
      mirror: z
        .string()
        .min(1)
        .optional()
        .meta({
          description:
            'Folder or http(s) base URL tried before the pinned upstream URLs when the service downloads an addon (POST /v1/addons/liveness/enable).',
          examples: ['/srv/vigil-models'],
        }),
    })
    .prefault({})
    .describe('Addons (liveness) and where they are downloaded from.'),
  detection: DetectionConfigSchema.prefault({}).describe(
    'The face detector; a collection may have its own detection profile.',
  ),
  collections: z
    .strictObject({
      save_face_crops: z
        .boolean()
        .default(false)
        .describe(
          'Store a 112x112 JPEG crop of each registered face (a gallery can then be re-embedded by another model).',
        ),
      default_search_profile: z
        .enum(SEARCH_PROFILES)
        .default('fp32_v1')
        .describe('How new collections store their vectors; int8 and fp16 profiles take less memory.'),
      default_capacity_rows: z
        .number()
        .int()
        .min(1)
        .default(100_000)
        .describe('Hard limit of live face rows per new collection.'),
      max_capacity_rows: z
        .number()
        .int()
        .min(1)
        .max(Number.MAX_SAFE_INTEGER)
        .default(10_000_000)
        .describe('The largest capacity a create request may ask for.'),
      default_max_faces_per_person: z
        .number()
        .int()
        .min(1)
        .max(1_000_000)
        .default(20)
        .describe('Faces kept per person.'),
      default_load_policy: z
        .enum(['eager', 'lazy'])
        .default('lazy')
        .describe('eager: the index is built at startup; lazy: on first use.'),
      search_threads: z
        .number()
        .int()
        .min(0)
        .max(256)
        .default(0)
        .describe('Threads one exact search may use; 0 = every core.'),
      int8_rerank: z
        .boolean()
        .default(true)
        .describe(
          "int8 profiles keep an fp16 copy of every row (2 bytes per value beside the 1 of the int8 row) and re-rank the scan's candidates from it: recall@10 against fp32 0.977-0.981 -> 0.999-1.000 on near-tie galleries, for about the same speed (docs/performance.md). false: the int8 score is the answer, as upstream, at a third of the memory.",
        ),
      default_search_index: z
        .enum(['exact', 'hnsw'])
        .default('exact')
        .describe(
          "Search index of new collections (a create request may choose): exact scans every row (the contract's exact search); hnsw is an approximate HNSW graph (usearch) built in the background and persisted under data_dir, its candidates re-ranked exactly, with exact search while it is built or stale.",
        ),
      hnsw_connectivity: z
        .number()
        .int()
        .min(4)
        .max(64)
        .default(32)
        .describe(
          'M, links per node: more = better recall, bigger file, slower build. M 32 / ef_add 256 by measurement (bench/search.ts, 1M clustered rows): known-person recall@10 at ef_search 64 is 0.89 against 0.51 for M 16 / 128, for a build about 3x longer and a 20 % bigger file.',
        ),
      hnsw_expansion_add: z.number().int().min(16).max(1024).default(256).describe('ef_construction of HNSW builds.'),
      hnsw_expansion_search: z
        .number()
        .int()
        .min(16)
        .max(4096)
        .default(256)
        .describe(
          'ef_search (at least the candidates a search asks for): 256 by measurement (bench/search.ts, M 32 / ef_add 256): face-query recall@10 0.997 at 1M (192: 0.992) for a p99 about 10 % higher (1.06 against 0.97 ms with the native walker); on a near-tie gallery of 100k faces both give known-person recall@10 0.999, where an outside test saw 0.986 at 192.',
        ),
      hnsw_memory: z
        .enum(['view', 'load', 'huge_pages'])
        .default('huge_pages')
        .describe(
          "How a served HNSW graph is held: view maps the file (page cache, pages dropped under pressure), load reads it into the daemon, huge_pages reads it into memory advised for transparent huge pages (fastest walks; the daemon's memory grows by the file's size, ~750 MiB at 1M faces). The file serves mapped while the copy is made.",
        ),
      index_build_threads: z
        .number()
        .int()
        .min(0)
        .max(256)
        .default(1)
        .describe('Threads a background index build (HNSW graph, snapshot) may use; 0 = every core.'),
      hnsw_rebuild_ratio: z
        .number()
        .min(0.001)
        .max(1)
        .default(0.05)
        .describe(
          'HNSW graphs are rebuilt when rows added or deleted since the build exceed this share of the graph...',
        ),
      hnsw_rebuild_interval_seconds: z
        .number()
        .int()
        .min(10)
        .default(3600)
        .describe('... or when anything changed since the build and this long has passed.'),
      snapshot_after_changes: z
        .number()
        .int()
        .min(1)
        .default(10_000)
        .describe(
          "Changed rows after which a collection's exact index snapshot (fast restarts) is rewritten in the background.",
        ),
      background_delete_min_rows: z
        .number()
        .int()
        .min(1)
        .default(10_000)
        .describe(
          'A collection of at least this many persons + faces is deleted in the background: gone at once, its rows deleted in short batches between requests (a force delete of a big one took 14.5 s to answer).',
        ),
    })
    .refine((c) => c.default_capacity_rows <= c.max_capacity_rows, {
      message: 'default_capacity_rows must not exceed max_capacity_rows',
      path: ['default_capacity_rows'],
    })
    .prefault({})
    .describe(
      "Defaults for new collections (a create request can override each but the maximum) and the deployment limits (upstream's INSIGHTFACE_COLLECTION_* settings).",
    ),
  registration: z
    .strictObject({
      min_score: z.number().min(0).max(1).default(0.6).describe('Detection score a registered face needs.'),
      min_quality: z
        .number()
        .min(0)
        .max(1)
        .default(0.35)
        .describe('Quality (sharpness, exposure) a registered face needs.'),
      min_face_size: z.number().int().min(1).default(40).describe('Pixels, the smaller side of the face box.'),
      max_pose_degrees: z.number().min(0).max(180).default(45).describe('Largest |yaw|, |pitch| and |roll|.'),
    })
    .prefault({})
    .describe('Quality gates of review_mode = "standard" / "strict" (review_mode = "off" skips them).'),
  web: z
    .strictObject({
      disabled: z
        .boolean()
        .default(false)
        .describe('true: no browser UI (/, /kiosk/<monitor_id>); the API is unaffected.'),
    })
    .prefault({})
    .describe('The browser UI (docs/web-ui.md).'),
  metrics: z
    .strictObject({
      enabled: z.boolean().default(true).describe('Serve GET /metrics.'),
      auth: z
        .enum(['bearer', 'token', 'loopback'])
        .default('bearer')
        .describe(
          'bearer: the admin API key; token: a separate read-only token (token below or VIGIL_METRICS_TOKEN) that opens /metrics and nothing else; loopback: no credential, answered only to connections from this host (127.0.0.1, ::1).',
        ),
      token: ApiKeySchema.optional().meta({
        description: 'The metrics token of auth = "token" (at least 16 characters); prefer VIGIL_METRICS_TOKEN.',
        examples: ['a-metrics-token-of-16+-chars'],
      }),
    })
    .prefault({})
    .describe('GET /metrics in Prometheus text format (docs/integrations/prometheus.md).'),
  scrapers: ScrapersConfigSchema.prefault({}).describe(
    'Scrapers for workspaces: quotas, queue, worker priority, retention (docs/scrapers/index.md). Workspaces and their keys: `vigil workspaces create`, `vigil keys create --workspace ID`.',
  ),
  events: EventsConfigSchema.prefault({}).describe(
    'The durable event history of the monitors, its pictures and retention (docs/events.md).',
  ),
  mqtt: MqttConfigSchema.prefault({}).describe(
    'MQTT output: Frigate-style topics and Home Assistant discovery (docs/integrations/mqtt.md). Credentials: VIGIL_MQTT_USERNAME / VIGIL_MQTT_PASSWORD.',
  ),
  webhooks: WebhooksConfigSchema.prefault({}).describe(
    'Signed webhooks (Standard Webhooks) from the durable outbox (docs/integrations/webhooks.md).',
  ),

  monitors: z
    .strictObject({
      max_streams: z
        .number()
        .int()
        .min(0)
        .max(64)
        .optional()
        .meta({
          description:
            'Enabled monitors at most; more gives 429 monitor_limit_exceeded. Absent: from the measured capacity, 4 per CPU core with software decoding and 6 with a hardware decoder template (at most 64; docs/performance.md#capacity).',
          examples: [8],
          defaultText: '4 per core (6 with a hardware decoder)',
        }),
      preview_fps: z
        .number()
        .min(1)
        .max(30)
        .default(5)
        .describe('MJPEG preview rate (JPEGs are encoded only while someone watches).'),
      jpeg_quality: z.number().int().min(1).max(100).default(82).describe('JPEG quality of the preview.'),
      open_timeout_seconds: z.number().min(0.5).max(60).default(5).describe('No first frame within this: reconnect.'),
      read_timeout_seconds: z.number().min(0.5).max(60).default(5).describe('No frame for this long: reconnect.'),
      reconnect_delay_seconds: z
        .number()
        .min(0.1)
        .max(30)
        .default(0.5)
        .describe(
          'Retry delay; while the source is known to be down a retry is only a probe (DNS, connect, DESCRIBE), so it stays short; a failing pipeline doubles it up to 30 s.',
        ),
      latency_ms: z
        .number()
        .int()
        .min(0)
        .max(10_000)
        .default(200)
        .describe('The rtspsrc jitter buffer: {latency_ms} in pipeline.'),
      frame_max_side: z
        .number()
        .int()
        .min(64)
        .max(16_384)
        .default(1280)
        .describe(
          'Frames reach inference with their longest side at most this (scaled in GStreamer, before colour conversion): {max_side} in pipeline.',
        ),
      reidentify_interval_seconds: z
        .number()
        .min(0)
        .max(60)
        .default(1)
        .describe(
          'A confirmed person whose face stays in (nearly) the same box (IoU >= 0.5) keeps the identity without a new embedding for this long, then is searched again; new, unconfirmed and unknown faces are embedded every frame; 0 = every face, every frame. Not applied when the liveness addon is on.',
        ),
      trim_letterbox: z
        .boolean()
        .default(true)
        .describe(
          'The letterboxed detector sizes ([detection] input_sizes above 160) run over the frame only: a 16:9 frame at 512x512 runs at 512x288 (44 % less detector work); false runs over the black fill below it too, like a /v1 request.',
        ),
      track_identity: z
        .boolean()
        .default(true)
        .describe(
          'Track-level identity: each track keeps its best frames by quality (track_frames) and is identified on the quality-weighted mean of their embeddings, re-decided as better frames arrive (events carry the basis: frames used, best quality, runner-up margin); false = every frame on its own. A monitor may override it (faces.track_identity).',
        ),
      track_frames: z
        .int()
        .min(1)
        .max(32)
        .default(5)
        .describe("Frames a track keeps (its best by quality) for its identity and an unknown visitor's sample crops."),
      track_hysteresis: z
        .number()
        .min(0)
        .max(0.5)
        .default(0.03)
        .describe(
          "How far a track's new template must clear its current identity to change it (similarity): unknown -> person needs threshold + this, person -> unknown below threshold - this, another person this much above the current one. Stops flapping at the threshold.",
        ),
      group_unknowns: z
        .boolean()
        .default(true)
        .describe(
          'Group unknown tracks into unknown visitors with stable ids (unknown_id in events, GET /v1/unknowns), keeping their best crops (unknown_crops) under the data dir. A monitor may turn it off (faces.group_unknowns = false): no crops, no grouping for its faces.',
        ),
      unknown_threshold: z
        .number()
        .min(0)
        .max(1)
        .default(0.55)
        .describe(
          'An unknown visit joins the unknown visitor whose centroid its track template reaches by this cosine similarity, else it starts a new one; unknowns whose centroids come this close merge. Calibrated on the default pack (bench/quality.ts track probes: purity 1.000 and completeness >= 0.954 on every degradation at 0.55, docs/performance.md); stricter than the match threshold because one unknown must never mix two people.',
        ),
      unknown_crops: z
        .int()
        .min(1)
        .max(20)
        .default(5)
        .describe(
          'Sample crops kept per unknown visitor (its best by quality; JPEG, 0600, <data_dir>/events/unknowns/).',
        ),
      clips: ClipsConfigSchema.describe(
        'Event clips (docs/cameras.md): MP4 recordings of the encoded stream around identity events, off by default.',
      ),
      motion: MotionConfigSchema.describe(
        "The motion gate (docs/cameras.md): a small grey copy of each sampled frame is compared with the scene's running average; the face detector runs only when something moves. Frigate gates an object detector (then finds faces in persons); Vigil gates the face detector itself.",
      ),
      pipeline: z
        .string()
        .default(DEFAULT_MONITOR_PIPELINE)
        .superRefine((p, ctx) => {
          const problem = pipelineProblem(p);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        })
        .describe(
          'The GStreamer decode pipeline. It needs an element named src (its location is set from the monitor URL, never spliced into this string) and must end in an appsink named sink that receives video/x-raw,format=RGB. Placeholders: {latency_ms}; {max_fps} (the monitor\'s inference_fps, or preview_fps when its preview is on and higher, rounded up, plus one); {max_side} (frame_max_side); {motion_height} ([monitors.motion] frame_height). An appsink named motion that receives video/x-raw,format=GRAY8 (a tee after the rate limiter) feeds the motion gate; without it every sampled frame is inferred. {record} right after the source ("rtspsrc ... ! {record}decodebin") is where event clips tee the encoded stream off (depayloader, parser, tee to mp4mux); a template without it records no clips. Keep "videorate name=rate drop-only=true max-rate={max_fps}" right after the decoder: it drops the frames past the monitor\'s rate before scaling and colour conversion, and the monitor reads the decoder\'s frame count from it. Hardware-decoder templates (Jetson, VA-API, V4L2) and rtsps:// certificates: docs/cameras.md.',
        ),
    })
    .prefault({})
    .describe(
      "RTSP monitors (upstream's INSIGHTFACE_RTSP_* settings) and the GStreamer pipeline that decodes them (docs/cameras.md); inference shares the [inference] workers.",
    ),
});

export type VigilConfig = z.infer<typeof ConfigSchema>;
export type DetectionConfig = z.infer<typeof DetectionConfigSchema>;
