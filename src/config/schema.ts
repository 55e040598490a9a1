import { z } from 'zod';
import { SEARCH_PROFILES } from '../contract/collections.js';
import { VERSION } from '../contract/version.js';

/**
 * server.toml. Every section is a strict object, so an unknown key is a startup error that names it.
 * Defaults mirror the upstream 0.3.x shipped file where a key exists there.
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
      ]),
    threshold: z.number().min(0).max(1).default(0.5),
    nms_threshold: z.number().min(0).max(1).default(0.4),
    single_face_selection: z.enum(['largest', 'center_largest']).default('largest'),
    max_detected_faces: z.number().int().min(1).max(100).default(100),
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
  /** Monthly items per workspace unless the workspace has its own quota (vigil workspaces create --quota). */
  free_items_per_month: z.int().min(0).default(1000),
  /** Monthly reviews per workspace (places scraper); reviews are metered apart from items. */
  free_reviews_per_month: z.int().min(0).default(10_000),
  /** Runs queued or running at once across workspaces; more is 503 scrape_queue_full. */
  max_queued_runs: z.int().min(1).max(10_000).default(32),
  max_concurrent_runs: z.int().min(1).max(16).default(2),
  /** Nice value of the scrape worker process (19 = lowest priority), so face inference keeps the CPU. */
  worker_nice: z.int().min(0).max(19).default(19),
  /** A synchronous scrape waits this long (capped below the request deadline), then answers 202 with the run. */
  sync_wait_seconds: z.number().positive().max(3600).default(50),
  /** Scraped items of finished runs are deleted after this (Reddit asks for deletions to propagate within 48 h); counts and billing stay. */
  result_retention_hours: z.number().positive().default(48),
  /** The only_new seen-set: item keys remembered per workspace and scraper kind; past it the least recently delivered are forgotten. */
  seen_items_per_kind: z.int().min(100).max(10_000_000).default(100_000),
  /** MCP tool names: "underscore" (forum_scrape, what Claude/OpenAI clients accept) or "dotted" (forum.scrape). Both are callable. */
  mcp_tool_names: z.enum(['underscore', 'dotted']).default('underscore'),
  forum: z
    .strictObject({
      enabled: z.boolean().default(true),
      /** oauth = app-only client credentials (the supported path); anonymous = www.reddit.com/*.json, blocked from most networks since 2026. */
      auth_mode: z.enum(['oauth', 'anonymous']).default('oauth'),
      /** Prefer VIGIL_REDDIT_CLIENT_ID / VIGIL_REDDIT_CLIENT_SECRET in the environment. */
      client_id: z.string().min(1).optional(),
      client_secret: z.string().min(1).optional(),
      api_base_url: z.url().default('https://oauth.reddit.com'),
      token_url: z.url().default('https://www.reddit.com/api/v1/access_token'),
      anonymous_base_url: z.url().default('https://www.reddit.com'),
      user_agent: z.string().min(1).default(`server:vigil:v${VERSION} (self-hosted)`),
      /** Reddit allows 100 per minute per OAuth client id (10 anonymous), averaged over 10 minutes. */
      requests_per_minute: z.number().positive().max(60_000).default(100),
      burst: z.int().min(1).max(1000).default(10),
      request_timeout_seconds: z.number().positive().max(300).default(20),
      max_retries: z.int().min(0).max(5).default(2),
      retry_backoff_ms: z.int().min(0).max(60_000).default(1000),
      /** A 429 asking to wait longer than this fails the source instead of holding the run. */
      max_retry_wait_seconds: z.number().min(0).max(3600).default(60),
      /** After an HTML "blocked" page, requests with this credential stop for this long. */
      blocked_cooldown_seconds: z.number().min(0).max(86_400).default(3600),
      /** "load more comments" / "continue this thread" expansions per post (PRAW's replace_more default is 32). */
      max_more_requests_per_post: z.int().min(0).max(1000).default(32),
    })
    .prefault({}),
  /** The places (Google Maps) scraper: HTTP only, no browser. */
  places: z
    .strictObject({
      /** Per-deployment kill switch (Google's terms prohibit automated access to Maps; the operator decides). */
      enabled: z.boolean().default(true),
      /** Search (/search?tbm=map), place pages (/maps/place, /maps?cid=), preview JSON and reviews (/maps/rpc) are all under this base. */
      base_url: z.url().default('https://www.google.com'),
      user_agent: z
        .string()
        .min(1)
        .default(
          'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36',
        ),
      /** Cookie header for every request: a SOCS consent cookie (EU), or a signed-in session for reviews. Prefer VIGIL_PLACES_COOKIE. */
      cookie: z.string().min(1).optional(),
      /** HTTP(S) proxy, http://user:pass@host:port (tunnelled with CONNECT). Prefer VIGIL_PLACES_PROXY_URL. */
      proxy_url: z.url({ protocol: /^https?$/ }).optional(),
      /** Google tolerates little from one IP: a slow token bucket plus 0..jitter_ms per request. */
      requests_per_minute: z.number().positive().max(60_000).default(30),
      burst: z.int().min(1).max(1000).default(3),
      jitter_ms: z.int().min(0).max(60_000).default(1000),
      request_timeout_seconds: z.number().positive().max(300).default(20),
      max_retries: z.int().min(0).max(5).default(2),
      retry_backoff_ms: z.int().min(0).max(60_000).default(1000),
      /** After a consent wall or an "unusual traffic" page, requests stop for this long (they fail fast with that problem). */
      blocked_cooldown_seconds: z.number().min(0).max(86_400).default(900),
      /** Result pages per search (20 places each); Google stops near 120 places per search anyway. */
      max_search_pages: z.int().min(1).max(50).default(10),
    })
    .prefault({}),
});

/**
 * rtspsrc -> decode -> drop to the rate inference uses -> scale to at most frame_max_side -> RGB ->
 * appsink keeping only the newest frame. `videorate drop-only=true max-rate={max_fps}` drops surplus
 * frames right after the decoder, so colour conversion, scaling and the copy into JavaScript happen
 * only for frames the monitor will use (5 of 25 at 5 inference fps), and `videoscale` works on the
 * decoder's YUV before conversion. `{max_fps}` is the monitor's inference rate (or the preview's when
 * enabled and higher) rounded up, plus one (see MonitorSession), `{max_side}` is [monitors] frame_max_side.
 * The URL is never spliced into this string: it is set as the `location` property of the element named
 * `src`, so it cannot inject elements.
 */
export const DEFAULT_MONITOR_PIPELINE =
  'rtspsrc name=src latency={latency_ms} protocols=tcp ! decodebin ! videorate name=rate drop-only=true max-rate={max_fps} ! videoscale ! video/x-raw,width=[1,{max_side}],height=[1,{max_side}],pixel-aspect-ratio=1/1 ! videoconvert ! video/x-raw,format=RGB ! appsink name=sink max-buffers=1 drop=true sync=false';

/** What the monitor pipeline template must contain for FrameSource to drive it. */
export function pipelineProblem(p: string): string | null {
  if (!/\bname=src\b/.test(p))
    return 'the monitor pipeline needs the RTSP source element named src (its location is set from the monitor URL)';
  if (!/appsink\b[^!]*\bname=sink\b/.test(p)) return 'the monitor pipeline must end in "appsink name=sink"';
  if (!/format=RGB\b/.test(p)) return 'the monitor pipeline must deliver video/x-raw,format=RGB to the appsink';
  return null;
}

/** The durable event history, its snapshots and retention. */
export const EventsConfigSchema = z.strictObject({
  /** Events are written in batches at most this often (a crash loses at most this much, plus a slow snapshot). */
  flush_interval_ms: z.int().min(10).max(1000).default(200),
  /** Identity events keep a face crop and a downscaled frame JPEG under <data_dir>/events/. */
  snapshots: z.boolean().default(true),
  /** Longest side of the frame snapshot (never upscaled). */
  snapshot_max_side: z.int().min(64).max(4096).default(640),
  /** The face crop: the face box grown by this fraction of its size on every side, longest side at most crop_max_side. */
  crop_margin: z.number().min(0).max(2).default(0.5),
  crop_max_side: z.int().min(64).max(1024).default(320),
  jpeg_quality: z.int().min(1).max(100).default(80),
  /** Retention, enforced in the background: events older than this (0 = no age limit). */
  max_age_days: z.number().min(0).max(36_500).default(30),
  /** At most this many events (the oldest go first; 0 = no limit). */
  max_events: z.int().min(0).default(200_000),
  /** Snapshot files take at most this many bytes: the oldest events lose their pictures first (0 = no limit). */
  max_snapshot_bytes: z
    .int()
    .min(0)
    .default(2 * 1024 ** 3),
  retention_interval_seconds: z.number().min(1).max(86_400).default(60),
});

/** MQTT output (Frigate-style topics and Home Assistant discovery). Credentials: VIGIL_MQTT_USERNAME / VIGIL_MQTT_PASSWORD. */
export const MqttConfigSchema = z.strictObject({
  enabled: z.boolean().default(false),
  /** mqtt://host:1883, mqtts://host:8883, ws:// or wss://. */
  url: z
    .string()
    .regex(/^(mqtts?|wss?):\/\/[^\s]+$/, 'url must be mqtt://, mqtts://, ws:// or wss://')
    .default('mqtt://127.0.0.1:1883'),
  username: z.string().min(1).optional(),
  password: z.string().min(1).optional(),
  /** Client id; default vigil-<hostname>. */
  client_id: z.string().min(1).max(128).optional(),
  topic_prefix: z
    .string()
    .regex(/^[^#+\s]+$/, 'topic_prefix may not contain #, + or spaces')
    .default('vigil'),
  /** QoS of event messages (retained state topics use the same). */
  qos: z.union([z.literal(0), z.literal(1), z.literal(2)]).default(1),
  /** Retain the per-event messages on <prefix>/<monitor>/events (state, presence, snapshot and discovery are always retained). */
  retain: z.boolean().default(false),
  /** TLS (mqtts:// or wss://): a CA file for a private broker, client certificate and key, and whether to verify the broker. */
  ca_file: z.string().min(1).optional(),
  cert_file: z.string().min(1).optional(),
  key_file: z.string().min(1).optional(),
  tls_verify: z.boolean().default(true),
  /** Home Assistant MQTT discovery. */
  discovery: z.boolean().default(true),
  discovery_prefix: z
    .string()
    .regex(/^[^#+\s]+$/)
    .default('homeassistant'),
  /** Publish each identity event's frame snapshot (JPEG bytes) on the retained <prefix>/<monitor>/snapshot topic. */
  snapshots: z.boolean().default(true),
  /** Messages kept while the broker is away; beyond this the oldest are dropped and counted. */
  queue_max_messages: z.int().min(10).max(10_000_000).default(100_000),
  reconnect_delay_seconds: z.number().min(0.1).max(300).default(1),
  max_reconnect_delay_seconds: z.number().min(0.1).max(3600).default(30),
  keepalive_seconds: z.int().min(5).max(3600).default(30),
});

/** Signed webhooks (Standard Webhooks) from the durable outbox. */
export const WebhooksConfigSchema = z.strictObject({
  /** Per-attempt timeout (connect + response). */
  timeout_seconds: z.number().min(0.5).max(120).default(10),
  /** Retry delays: first_retry_seconds doubling up to max_retry_delay_seconds, each with +-jitter. */
  first_retry_seconds: z.number().min(0.1).max(3600).default(5),
  max_retry_delay_seconds: z.number().min(0.1).max(86_400).default(300),
  /** A retry waits delay * (1 +- jitter). */
  jitter: z.number().min(0).max(1).default(0.2),
  /** Consecutive failed attempts after which an endpoint is disabled (with the reason); 0 = never. */
  disable_after_failures: z.int().min(0).default(100),
  /** Messages waiting per endpoint; beyond this the endpoint is disabled with reason backlog_full. */
  max_pending_per_endpoint: z.int().min(1).default(100_000),
  /** Attempts kept in each endpoint's delivery log. */
  log_size: z.int().min(10).max(100_000).default(500),
  /** Same-host redirects followed per attempt (redirects to another host are never followed). */
  max_redirects: z.int().min(0).max(10).default(3),
  /** Endpoints may use http:// (LAN receivers); false = https:// only. */
  allow_http: z.boolean().default(true),
  /** Run webhook endpoints a workspace may register (/workspaces/{id}/webhooks); more is 409 webhook_limit_reached. */
  max_endpoints_per_workspace: z.int().min(1).max(1000).default(10),
});

/**
 * Where the gallery lives. sqlite (default): the box's own file under data_dir, nothing else needed.
 * postgres (fleet mode): collections, persons and faces live in PostgreSQL; every box keeps a local
 * SQLite replica and its search indexes, and follows the database's change log.
 */
export const StoreConfigSchema = z
  .strictObject({
    backend: z.enum(['sqlite', 'postgres']).default('sqlite'),
    /** postgres://user@host:5432/vigil; the password comes from VIGIL_STORE_PASSWORD or password_file, never the file. */
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\/[^\s]+$/, 'url must be postgres://…')
      .optional(),
    password_file: z.string().min(1).optional(),
    pool_size: z.number().int().min(1).max(100).default(8),
    /** Seconds between full catch-up passes of the follower (LISTEN/NOTIFY wakes it sooner). */
    follow_interval_seconds: z.number().min(0.1).max(3600).default(5),
    /**
     * Change-log pruning: changes every box seen within this many seconds has applied are deleted; a box
     * away for longer copies its collections afresh when it returns. 0 = never prune.
     */
    change_log_retention_seconds: z.number().min(0).max(31_536_000).default(604_800),
    /** Seconds between two prunes of the change log (one box of the fleet does each, under an advisory lock). */
    change_log_prune_interval_seconds: z.number().min(0.1).max(86_400).default(600),
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
      host: z.string().default('0.0.0.0'),
      port: z.number().int().min(0).max(65535).default(8080),
      data_dir: z.string().default('/var/lib/vigil'),
      models_dir: z.string().default('/var/lib/vigil/models'),
      /** The model catalog (packs, addons, pinned sources); the bundled models/manifest.json when absent. */
      model_catalog: z.string().min(1).optional(),
      max_request_bytes: z
        .number()
        .int()
        .min(1024)
        .default(64 * 1024 * 1024),
      /** Space kept free in data_dir and released when the disk fills, so deletes can still free space. */
      storage_reserve_bytes: z
        .number()
        .int()
        .min(0)
        .max(1024 * 1024 * 1024)
        .default(8 * 1024 * 1024),
      max_image_bytes: z
        .number()
        .int()
        .min(1024)
        .default(10 * 1024 * 1024),
      max_image_pixels: z.number().int().min(1).default(40_000_000),
      /** Longest image side and side ratio, checked from the header before decoding (a 1 x 39,000,000 PNG passes the pixel cap). */
      max_image_side: z
        .number()
        .int()
        .min(16)
        .max(2 ** 30)
        .default(16_384),
      max_image_aspect_ratio: z
        .number()
        .min(1)
        .max(2 ** 30)
        .default(20),
      /** An image decode running longer than this is stopped (422 invalid_image, reason decode_timeout). */
      image_decode_timeout_seconds: z.number().int().min(1).max(600).default(10),
      max_registration_images: z.number().int().min(1).max(100).default(20),
      request_timeout_seconds: z.number().positive().max(3600).default(60),
      cors_origins: z.array(z.string().url()).default([]),
      log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      /** This box's name in a fleet (monitors and events carry it); absent = the hostname. */
      box_id: z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'box_id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
        .optional(),
    })
    .prefault({}),
  store: StoreConfigSchema.prefault({}),
  auth: z
    .strictObject({
      enabled: z.boolean().default(true),
      /** Prefer VIGIL_API_KEY in the environment; a key here is convenient on a dev box only. */
      api_key: ApiKeySchema.optional(),
      /** Wrong keys one source address may present per window before it gets 429 until the window ends. */
      max_failures: z.number().int().min(1).default(20),
      failure_window_seconds: z.number().int().min(1).max(86_400).default(60),
    })
    .prefault({}),
  inference: z
    .strictObject({
      model_pack: z.string().default('edge_s'),
      /** Ordered; every listed provider must be available, nothing falls back silently. */
      execution_providers: z.array(providers).min(1).default(['cpu']),
      device_id: z.number().int().min(0).default(0),
      max_concurrency: concurrency.default('auto'),
      intra_op_threads: concurrency.default('auto'),
      /** Jobs one worker holds at once, so a job's decode overlaps another's models ('auto': 2 on a CPU-only box of 2+ cores with max_concurrency 'auto', else 1). */
      jobs_per_worker: z.union([z.literal('auto'), z.number().int().min(1).max(4)]).default('auto'),
      /** ONNX Runtime graph optimisation; 'auto' times 'extended' and 'all' per model at startup. */
      graph_optimization: z.enum(['auto', 'basic', 'extended', 'all']).default('auto'),
      /** Compare's and new collections' default; absent = the pack's recommended_threshold (models/manifest.json), else 0.4. */
      default_threshold: z.number().min(0).max(1).optional(),
      /** Runtime addons; ["liveness"] turns on the liveness check (absent = disabled, as legacy files). */
      addons: z.array(z.enum(['liveness'])).default([]),
      liveness_mode: z.enum(['normal', 'observe']).default('normal'),
      liveness_threshold: z.number().min(0).max(1).default(0.8),
      liveness_compare_scope: z.enum(['both', 'source', 'target']).default('both'),
      liveness_on_registration: z.boolean().default(false),
    })
    .prefault({}),
  addons: z
    .strictObject({
      /** `vigil models install` also fetches these addons, even when the pack is already installed. */
      auto_download: z.array(z.enum(['liveness'])).default([]),
      /** Folder or http(s) base URL tried before the pinned upstream URLs when the service downloads an addon. */
      mirror: z.string().min(1).optional(),
    })
    .prefault({}),
  detection: DetectionConfigSchema.prefault({}),
  /** Defaults for new collections and the deployment limits (upstream's INSIGHTFACE_COLLECTION_* settings). */
  collections: z
    .strictObject({
      save_face_crops: z.boolean().default(false),
      default_search_profile: z.enum(SEARCH_PROFILES).default('fp32_v1'),
      default_capacity_rows: z.number().int().min(1).default(100_000),
      max_capacity_rows: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).default(10_000_000),
      default_max_faces_per_person: z.number().int().min(1).max(1_000_000).default(20),
      default_load_policy: z.enum(['eager', 'lazy']).default('lazy'),
      /** Threads one exact search may use; 0 = every core. */
      search_threads: z.number().int().min(0).max(256).default(0),
      /**
       * int8 profiles keep an fp16 copy of every row (2 bytes per value beside the 1 of the int8 row) and
       * re-rank the scan's candidates from it: recall@10 against fp32 0.96 -> 1.000 on near-tie galleries
       * (docs/performance.md). false: the int8 score is the answer, as upstream, at a third of the memory.
       */
      int8_rerank: z.boolean().default(true),
      /** exact | hnsw: the search index of new collections (a create request may choose). */
      default_search_index: z.enum(['exact', 'hnsw']).default('exact'),
      /**
       * M 32 / ef_add 256 by measurement (bench/search.ts, 1M clustered rows): known-person recall@10 at
       * ef_search 64 is 0.89 against 0.51 for M 16 / 128, for a build about 3x longer and a 20 % bigger file.
       */
      hnsw_connectivity: z.number().int().min(4).max(64).default(32),
      hnsw_expansion_add: z.number().int().min(16).max(1024).default(256),
      /**
       * ef_search 192: the first setting with recall@10 >= 0.99 for face queries at 1M (bench/search.ts, M 32 /
       * ef_add 256: 0.992, p99 0.9-1.1 ms with the native walker; ef 64 gave 0.89).
       */
      hnsw_expansion_search: z.number().int().min(16).max(4096).default(192),
      /** How a served HNSW graph is held: view (mapped file), load (read in) or huge_pages (read in, THP advised). */
      hnsw_memory: z.enum(['view', 'load', 'huge_pages']).default('huge_pages'),
      /** Threads a background index build (HNSW graph, snapshot) may use; 0 = every core. */
      index_build_threads: z.number().int().min(0).max(256).default(1),
      /** HNSW graphs are rebuilt when rows added or deleted since the build exceed this share of the graph. */
      hnsw_rebuild_ratio: z.number().min(0.001).max(1).default(0.05),
      /** ... or when anything changed since the build and this long has passed. */
      hnsw_rebuild_interval_seconds: z.number().int().min(10).default(3600),
      /** Changed rows after which a collection's exact index snapshot is rewritten in the background. */
      snapshot_after_changes: z.number().int().min(1).default(10_000),
    })
    .refine((c) => c.default_capacity_rows <= c.max_capacity_rows, {
      message: 'default_capacity_rows must not exceed max_capacity_rows',
      path: ['default_capacity_rows'],
    })
    .prefault({}),
  /** Quality gates of review_mode standard/strict (§3.5). */
  registration: z
    .strictObject({
      min_score: z.number().min(0).max(1).default(0.6),
      min_quality: z.number().min(0).max(1).default(0.35),
      min_face_size: z.number().int().min(1).default(40),
      max_pose_degrees: z.number().min(0).max(180).default(45),
    })
    .prefault({}),
  web: z.strictObject({ disabled: z.boolean().default(false) }).prefault({}),
  /** GET /metrics (Prometheus text format). */
  metrics: z
    .strictObject({
      enabled: z.boolean().default(true),
      /** bearer = the admin API key; token = a separate read-only metrics token (token or VIGIL_METRICS_TOKEN); loopback = no credential, this host only. */
      auth: z.enum(['bearer', 'token', 'loopback']).default('bearer'),
      token: ApiKeySchema.optional(),
    })
    .prefault({}),
  scrapers: ScrapersConfigSchema.prefault({}),
  events: EventsConfigSchema.prefault({}),
  mqtt: MqttConfigSchema.prefault({}),
  webhooks: WebhooksConfigSchema.prefault({}),

  /** RTSP monitors (upstream's INSIGHTFACE_RTSP_* settings) and the GStreamer pipeline that decodes them. */
  monitors: z
    .strictObject({
      max_streams: z.number().int().min(0).max(64).default(4),
      preview_fps: z.number().min(1).max(30).default(5),
      jpeg_quality: z.number().int().min(1).max(100).default(82),
      open_timeout_seconds: z.number().min(0.5).max(60).default(5),
      read_timeout_seconds: z.number().min(0.5).max(60).default(5),
      /** Retry delay; while the source is known to be down a retry is only a probe (DNS, connect, DESCRIBE), so it stays short. */
      reconnect_delay_seconds: z.number().min(0.1).max(30).default(0.5),
      latency_ms: z.number().int().min(0).max(10_000).default(200),
      /** Frames reach inference with their longest side at most this (scaled in GStreamer, before colour conversion): {max_side}. */
      frame_max_side: z.number().int().min(64).max(16_384).default(1280),
      /**
       * A confirmed, matched track whose face stays in (nearly) the same box keeps its identity without a new
       * embedding for this long, then is searched again; 0 embeds every face in every frame.
       */
      reidentify_interval_seconds: z.number().min(0).max(60).default(1),
      /** Run the letterboxed detector sizes over the frame only, not over the fill below it (AnalyzeRequest.trimLetterbox). */
      trim_letterbox: z.boolean().default(true),
      pipeline: z
        .string()
        .default(DEFAULT_MONITOR_PIPELINE)
        .superRefine((p, ctx) => {
          const problem = pipelineProblem(p);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }),
    })
    .prefault({}),
});

export type VigilConfig = z.infer<typeof ConfigSchema>;
export type DetectionConfig = z.infer<typeof DetectionConfigSchema>;
