import { isIP } from 'node:net';
import { timingSafeEqual, createHash } from 'node:crypto';
import type Koa from 'koa';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { Errors } from '../contract/errors.js';
import { buildCommit, VERSION } from '../contract/version.js';
import type { HistoryOutput } from '../events/eventHistory.js';
import type { StoredEvent } from '../events/historyStore.js';
import type { EngineObserver } from '../inference/engine.js';
import type { FinishedRun } from '../scrapers/runService.js';
import type { ApiKeyStore } from '../auth/apiKeyStore.js';
import { parseBearer } from './auth.js';
import type { AppState } from './route.js';
import type { Runtime } from './runtime.js';
import type { FollowerStatus } from '../collections/fleetFollower.js';
import type { DatabaseSpace } from '../store/spaceReclaimer.js';
import type { WebhookEndpointHealth } from '../webhooks/webhookStore.js';

/** Per-collection series stop here, so a box with thousands of collections cannot flood the scrape. */
const MAX_COLLECTION_SERIES = 200;
/** Per-webhook-endpoint series stop here (workspaces may each register endpoints). */
const MAX_WEBHOOK_SERIES = 200;
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const SEARCH_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/**
 * The Prometheus registry of one daemon. Work that happens is counted where it happens (HTTP requests,
 * inference jobs, index scans, finished scrape runs, recorded events); state (queues, monitors, rows) is
 * read from the services at scrape time. Labels are bounded: route templates (never raw paths), monitor
 * and collection ids (operator-made, capped), codes and kinds; never person ids or face ids.
 */
export class VigilMetrics {
  readonly registry = new Registry();
  private rt: Runtime | null = null;

  private readonly httpRequests = new Counter({
    name: 'vigil_http_requests_total',
    help: 'HTTP requests by route template, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  private readonly httpDuration = new Histogram({
    name: 'vigil_http_request_duration_seconds',
    help: 'HTTP request latency by route template and method.',
    labelNames: ['route', 'method'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly inferenceJobs = new Counter({
    name: 'vigil_inference_jobs_total',
    help: 'Inference jobs (one image through the pipeline) by outcome.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly inferenceWait = new Histogram({
    name: 'vigil_inference_queue_wait_seconds',
    help: 'Time a job waited for a free inference worker.',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly inferenceStage = new Histogram({
    name: 'vigil_inference_stage_duration_seconds',
    help: 'Pipeline stage latency (decode, detect, liveness, embed; align is part of embed).',
    labelNames: ['stage'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly searchDuration = new Histogram({
    name: 'vigil_search_duration_seconds',
    help: 'Index scan latency: search (API, per query face) and identify (monitors, per frame).',
    labelNames: ['op'] as const,
    buckets: SEARCH_BUCKETS,
    registers: [this.registry],
  });
  private readonly scrapeRuns = new Counter({
    name: 'vigil_scrape_runs_total',
    help: 'Finished scrape runs by scraper kind and final status.',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly scrapeItems = new Counter({
    name: 'vigil_scrape_items_billed_total',
    help: 'Items billed to workspaces by scraper kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly scrapeReviews = new Counter({
    name: 'vigil_scrape_reviews_billed_total',
    help: 'Reviews billed to workspaces by scraper kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly scrapeErrors = new Counter({
    name: 'vigil_scrape_upstream_errors_total',
    help: 'Failed scrape sources by scraper kind and problem code.',
    labelNames: ['kind', 'code'] as const,
    registers: [this.registry],
  });
  private readonly events = new Counter({
    name: 'vigil_monitor_events_total',
    help: 'Monitor events written to the history, by monitor and type.',
    labelNames: ['monitor', 'type'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 20 });
    // prom-client's gauges named *_total fail promtool's lint; the same values stay as nodejs_active_{handles,requests,resources}.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
      this.registry.removeSingleMetric(name);
    new Gauge({
      name: 'vigil_build_info',
      help: 'Version and git commit of the running daemon (value 1).',
      labelNames: ['version', 'commit', 'node_version'] as const,
      registers: [this.registry],
    }).set({ version: VERSION, commit: buildCommit(), node_version: process.version }, 1);
    this.stateCollectors();
  }

  /**
   * The daemon's services, read at scrape time. Families of features that are off are not registered at
   * all (no `vigil_mqtt_connected 0` without MQTT, no fleet series on a one-box daemon).
   */
  attach(rt: Runtime): void {
    this.rt = rt;
    if (rt.events.status().mqtt.enabled) this.mqttEnabled();
    if (rt.fleet) this.fleetCollectors();
    this.webhookCollectors();
  }

  /** Koa middleware counting every request by its route template (unmatched paths share one label). */
  http(): Koa.Middleware<AppState> {
    return async (ctx, next) => {
      const started = performance.now();
      try {
        await next();
      } finally {
        const matched = (ctx as unknown as { _matchedRoute?: string | RegExp })._matchedRoute;
        const route =
          typeof matched === 'string'
            ? matched
            : ctx.path.startsWith('/v1/') || ctx.path.startsWith('/workspaces/')
              ? 'unmatched'
              : 'web';
        const method = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'].includes(ctx.method)
          ? ctx.method
          : 'OTHER';
        this.httpRequests.inc({ route, method, status: String(ctx.status) });
        this.httpDuration.observe({ route, method }, (performance.now() - started) / 1000);
      }
    };
  }

  readonly engineObserver: EngineObserver = {
    job: (waitSeconds, timings) => {
      this.inferenceWait.observe(waitSeconds);
      if (!timings) {
        this.inferenceJobs.inc({ outcome: 'error' });
        return;
      }
      this.inferenceJobs.inc({ outcome: 'ok' });
      this.inferenceStage.observe({ stage: 'decode' }, timings.decode_ms / 1000);
      this.inferenceStage.observe({ stage: 'detect' }, timings.detect_ms / 1000);
      if (timings.liveness_ms > 0) this.inferenceStage.observe({ stage: 'liveness' }, timings.liveness_ms / 1000);
      this.inferenceStage.observe({ stage: 'embed' }, timings.embed_ms / 1000);
    },
  };

  readonly searchObserver = (op: 'search' | 'identify', _collectionId: string, seconds: number): void => {
    this.searchDuration.observe({ op }, seconds);
  };

  readonly scrapeFinished = (run: FinishedRun): void => {
    const { kind, status, billed_units, billed_reviews, result_json } = run.row;
    this.scrapeRuns.inc({ kind, outcome: status });
    if (billed_units) this.scrapeItems.inc({ kind }, billed_units);
    if (billed_reviews) this.scrapeReviews.inc({ kind }, billed_reviews);
    try {
      const result = result_json
        ? (JSON.parse(result_json) as { sources?: { status?: string; problem?: { code?: string } }[] })
        : null;
      for (const s of result?.sources ?? [])
        if (s.status === 'failed') this.scrapeErrors.inc({ kind, code: s.problem?.code ?? 'unknown' });
    } catch {
      /* a result that does not parse counts no errors */
    }
  };

  readonly eventOutput: HistoryOutput = {
    recorded: (e: StoredEvent) => this.events.inc({ monitor: e.monitor_id, type: e.type }),
  };

  /** Gauges and counters whose value lives in a service; computed when Prometheus scrapes. */
  private stateCollectors(): void {
    const reg = [this.registry];
    const rt = () => this.rt;
    new Gauge({
      name: 'vigil_ready',
      help: '1 when the models are loaded and the service is ready.',
      registers: reg,
      collect() {
        this.set(rt()?.inference ? 1 : 0);
      },
    });
    new Gauge({
      name: 'vigil_inference_queue_depth',
      help: 'Inference jobs waiting for a worker.',
      registers: reg,
      collect() {
        this.set(rt()?.inference?.engine.stats().waiting ?? 0);
      },
    });
    new Gauge({
      name: 'vigil_inference_active_jobs',
      help: 'Inference jobs held by workers now (running or being decoded there).',
      registers: reg,
      collect() {
        this.set(rt()?.inference?.engine.stats().active ?? 0);
      },
    });
    new Gauge({
      name: 'vigil_inference_workers',
      help: 'Inference worker threads.',
      registers: reg,
      collect() {
        this.set(rt()?.inference?.engine.stats().workers ?? 0);
      },
    });

    new Gauge({
      name: 'vigil_search_rows',
      help: "Live face rows in each collection's search index.",
      labelNames: ['collection'] as const,
      registers: reg,
      collect() {
        this.reset();
        for (const c of collectionSummaries(rt()))
          this.set({ collection: String(c.collection_id) }, Number(c.live_rows) || 0);
      },
    });
    new Gauge({
      name: 'vigil_search_index_bytes',
      help: "Memory of each collection's loaded search index.",
      labelNames: ['collection'] as const,
      registers: reg,
      collect() {
        this.reset();
        for (const c of collectionSummaries(rt()))
          this.set({ collection: String(c.collection_id) }, Number(c.memory_bytes) || 0);
      },
    });

    // Monitors: one state read per monitor per scrape. Counters that live in a session restart from 0 with
    // the session, which Prometheus' rate() treats as a counter reset.
    const monitorStates = () => {
      const r = rt();
      if (!r) return [];
      return r.monitors.all().map((m) => ({ id: m.id, enabled: m.enabled, state: r.monitors.state(m.id) }));
    };
    const perMonitorGauge = (
      name: string,
      help: string,
      value: (s: ReturnType<typeof monitorStates>[number]) => number | null,
    ) =>
      new Gauge({
        name,
        help,
        labelNames: ['monitor'] as const,
        registers: reg,
        collect() {
          this.reset();
          for (const m of monitorStates()) {
            const v = value(m);
            if (v !== null) this.set({ monitor: m.id }, v);
          }
        },
      });
    const perMonitorCounter = (
      name: string,
      help: string,
      value: (s: ReturnType<typeof monitorStates>[number]) => number,
    ) =>
      new Counter({
        name,
        help,
        labelNames: ['monitor'] as const,
        registers: reg,
        collect() {
          this.reset();
          for (const m of monitorStates()) this.inc({ monitor: m.id }, value(m));
        },
      });
    perMonitorGauge('vigil_monitor_enabled', 'Whether the monitor is enabled.', (m) => (m.enabled ? 1 : 0));
    perMonitorGauge('vigil_monitor_connected', "Whether the monitor's RTSP source is connected.", (m) =>
      m.state.connected ? 1 : 0,
    );
    perMonitorGauge(
      'vigil_monitor_source_fps',
      'Frames per second the source announces.',
      (m) => m.state.source.source_fps ?? null,
    );
    perMonitorGauge(
      'vigil_monitor_inference_fps',
      'Frames per second actually inferred.',
      (m) => m.state.inference.actual_fps,
    );
    perMonitorGauge(
      'vigil_monitor_configured_fps',
      'Configured inference_fps.',
      (m) => m.state.inference.configured_fps,
    );
    perMonitorGauge('vigil_monitor_processing_seconds', 'Processing time of the last inferred frame.', (m) =>
      m.state.inference.processing_ms === null ? null : m.state.inference.processing_ms / 1000,
    );
    perMonitorGauge(
      'vigil_monitor_preview_viewers',
      "Clients watching the monitor's MJPEG preview.",
      (m) => m.state.preview.viewers,
    );
    perMonitorGauge(
      'vigil_monitor_faces',
      "Faces tracked in the monitor's current frame.",
      (m) => m.state.faces.length,
    );
    perMonitorCounter(
      'vigil_monitor_frames_decoded_total',
      'Frames decoded from the source in this session.',
      (m) => m.state.inference.decoded_frames,
    );
    perMonitorCounter(
      'vigil_monitor_frames_inferred_total',
      'Frames run through inference in this session.',
      (m) => m.state.inference.processed_frames,
    );
    perMonitorCounter(
      'vigil_monitor_frames_dropped_total',
      'Decoded frames skipped because inference was busy or slower than the source.',
      (m) => m.state.inference.dropped_frames,
    );
    perMonitorCounter(
      'vigil_monitor_faces_embedded_total',
      'Faces embedded and searched in this session.',
      (m) => m.state.inference.embedded_faces,
    );
    perMonitorCounter(
      'vigil_monitor_late_frames_total',
      'Processed frames that took longer than the inference interval (wait for a worker + inference).',
      (m) => m.state.inference.late_frames,
    );
    perMonitorCounter(
      'vigil_monitor_identities_reused_total',
      "Faces that kept their confirmed track's identity instead of a new embedding ([monitors] reidentify_interval_seconds).",
      (m) => m.state.inference.reused_identities,
    );
    perMonitorGauge('vigil_monitor_motion', "Whether the monitor's motion is on (the MQTT motion topic).", (m) =>
      m.state.motion.active ? 1 : 0,
    );
    perMonitorCounter(
      'vigil_monitor_motion_frames_total',
      'Motion frames in which something moved, in this session.',
      (m) => m.state.motion.motion_frames,
    );
    perMonitorCounter(
      'vigil_monitor_inferences_skipped_total',
      'Inferences the motion gate saved (inference intervals with a new frame and nothing to look for), in this session.',
      (m) => m.state.motion.inferences_skipped,
    );
    perMonitorCounter(
      'vigil_monitor_region_inferences_total',
      'Inferences that ran on the moving region only instead of the whole frame, in this session.',
      (m) => m.state.motion.region_inferences,
    );
    perMonitorCounter(
      'vigil_monitor_faces_ignored_total',
      "Faces dropped by the monitor's face_mask or min_face_size, in this session.",
      (m) => m.state.inference.ignored_faces,
    );
    perMonitorCounter(
      'vigil_monitor_reconnects_total',
      'Source reconnects in this session.',
      (m) => m.state.reconnects,
    );
    perMonitorCounter(
      'vigil_monitor_inference_errors_total',
      'Frames whose inference failed in this session.',
      (m) => m.state.inference_errors,
    );
    new Gauge({
      name: 'vigil_monitor_last_error',
      help: "The monitor's last error code (value 1; absent when none).",
      labelNames: ['monitor', 'code'] as const,
      registers: reg,
      collect() {
        this.reset();
        for (const m of monitorStates()) {
          const e = m.state.last_error;
          if (e && typeof e === 'object' && typeof e.code === 'string') this.set({ monitor: m.id, code: e.code }, 1);
        }
      },
    });

    new Gauge({
      name: 'vigil_scrape_queue_depth',
      help: 'Scrape runs by queue state.',
      labelNames: ['state'] as const,
      registers: reg,
      collect() {
        const d = rt()?.scrapes.depth() ?? { queued: 0, running: 0 };
        this.set({ state: 'queued' }, d.queued);
        this.set({ state: 'running' }, d.running);
      },
    });

    // Event outputs (history size, MQTT queue, webhook outbox), from the same status /v1/events/status shows.
    const outputs = () => rt()?.events.status() ?? null;
    new Gauge({
      name: 'vigil_event_history_events',
      help: 'Events in the durable history.',
      registers: reg,
      collect() {
        this.set(Number((outputs()?.history as { events?: number } | undefined)?.events) || 0);
      },
    });
    this.databaseCollectors();
  }

  /** The database's bytes on disk, read from the files and SQLite's header when Prometheus scrapes. */
  private databaseCollectors(): void {
    const reg = [this.registry];
    const space = () => {
      const r = this.rt;
      return r?.db.db.open ? r.db.space.space() : null;
    };
    const gauge = (name: string, help: string, value: (s: DatabaseSpace) => number) =>
      new Gauge({
        name,
        help,
        registers: reg,
        collect() {
          const s = space();
          if (s) this.set(value(s));
        },
      });
    gauge('vigil_database_bytes', 'Size of the SQLite database file (vigil.db).', (s) => s.file_bytes);
    gauge('vigil_database_wal_bytes', 'Size of its write-ahead log (vigil.db-wal).', (s) => s.wal_bytes);
    gauge(
      'vigil_database_freelist_bytes',
      'Bytes of the database file that hold nothing (deleted data not yet given back to the file system).',
      (s) => s.freelist_bytes,
    );
    const rt = () => this.rt;
    new Gauge({
      name: 'vigil_collection_purges_pending',
      help: 'Deleted collections whose rows are still being deleted in the background.',
      registers: reg,
      collect() {
        this.set(rt()?.purges?.pending().length ?? 0);
      },
    });
  }

  private mqttRegistered = false;
  /** Registers the MQTT families once: at start with [mqtt] enabled, or when a setting turns it on while running. */
  mqttEnabled(): void {
    if (this.mqttRegistered) return;
    this.mqttRegistered = true;
    this.mqttCollectors();
  }

  /** [mqtt] enabled: the MQTT output's queue and connection, from the status /v1/events/status shows. */
  private mqttCollectors(): void {
    const reg = [this.registry];
    const outputs = () => this.rt?.events.status() ?? null;
    new Gauge({
      name: 'vigil_mqtt_connected',
      help: 'Whether the MQTT output is connected to its broker.',
      registers: reg,
      collect() {
        this.set(outputs()?.mqtt.connected ? 1 : 0);
      },
    });
    new Gauge({
      name: 'vigil_mqtt_queued_messages',
      help: 'MQTT messages waiting for the broker.',
      registers: reg,
      collect() {
        this.set(outputs()?.mqtt.queued ?? 0);
      },
    });
    new Counter({
      name: 'vigil_mqtt_published_total',
      help: 'MQTT messages published since start.',
      registers: reg,
      collect() {
        this.reset();
        this.inc(outputs()?.mqtt.published ?? 0);
      },
    });
    new Counter({
      name: 'vigil_mqtt_dropped_total',
      help: 'MQTT messages dropped because the queue was full.',
      registers: reg,
      collect() {
        this.reset();
        this.inc(outputs()?.mqtt.dropped ?? 0);
      },
    });
  }

  /**
   * Webhook endpoints (admin and workspace scopes): enabled or not, messages waiting, failure streak; per
   * endpoint (generated ids, at most MAX_WEBHOOK_SERIES of them) and the totals by state.
   */
  private webhookCollectors(): void {
    const reg = [this.registry];
    const health = () => this.rt?.webhooks.health(MAX_WEBHOOK_SERIES) ?? null;
    const perEndpoint = (name: string, help: string, value: (e: WebhookEndpointHealth) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['endpoint', 'scope'] as const,
        registers: reg,
        collect() {
          this.reset();
          for (const e of health()?.endpoints ?? []) this.set({ endpoint: e.id, scope: e.scope }, value(e));
        },
      });
    perEndpoint(
      'vigil_webhook_endpoint_enabled',
      'Whether the webhook endpoint is enabled (0: disabled, see its disabled_reason).',
      (e) => (e.enabled ? 1 : 0),
    );
    perEndpoint(
      'vigil_webhook_pending_messages',
      "Messages waiting in the outbox for the endpoint (delivered in order; a disabled endpoint's wait until it is enabled).",
      (e) => e.pending,
    );
    perEndpoint(
      'vigil_webhook_failure_streak',
      'Consecutive failed delivery attempts of the endpoint ([webhooks] disable_after_failures disables it).',
      (e) => e.failure_streak,
    );
    new Gauge({
      name: 'vigil_webhook_endpoints',
      help: 'Webhook endpoints by state.',
      labelNames: ['state'] as const,
      registers: reg,
      collect() {
        const h = health();
        this.set({ state: 'enabled' }, h?.enabled ?? 0);
        this.set({ state: 'disabled' }, h?.disabled ?? 0);
      },
    });
  }

  /** Fleet mode ([store] backend = "postgres"): event forwarding and the gallery follower. */
  private fleetCollectors(): void {
    const reg = [this.registry];
    const rt = () => this.rt;
    const outputs = () => rt()?.events.status() ?? null;
    // Local events not yet in the fleet's database.
    new Gauge({
      name: 'vigil_fleet_event_backlog',
      help: 'Fleet mode: events recorded locally and not yet forwarded to the fleet database.',
      registers: reg,
      collect() {
        this.set((outputs() as { fleet?: { backlog?: number } } | null)?.fleet?.backlog ?? 0);
      },
    });
    // The follower of the shared gallery, labelled by box so a fleet's series aggregate.
    const follower = () => {
      const f = rt()?.fleet;
      return f ? { box: f.boxId, s: f.follower.snapshot() } : null;
    };
    const fleetGauge = (name: string, help: string, value: (s: FollowerStatus) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: ['box'] as const,
        registers: reg,
        collect() {
          this.reset();
          const f = follower();
          const v = f ? value(f.s) : null;
          if (f && v !== null) this.set({ box: f.box }, v);
        },
      });
    const fleetCounter = (name: string, help: string, value: (s: FollowerStatus) => number) =>
      new Counter({
        name,
        help,
        labelNames: ['box'] as const,
        registers: reg,
        collect() {
          this.reset();
          const f = follower();
          if (f) this.inc({ box: f.box }, value(f.s));
        },
      });
    fleetGauge(
      'vigil_fleet_database_connected',
      'Whether this box reaches the shared gallery database (1) or serves its replica degraded (0).',
      (s) => (s.state === 'connected' ? 1 : 0),
    );
    fleetGauge(
      'vigil_fleet_revisions_behind',
      "Gallery revisions committed in PostgreSQL and not yet applied to this box's replica and index (all collections).",
      (s) => s.revisions_behind,
    );
    fleetGauge(
      'vigil_fleet_seconds_since_last_apply',
      'Seconds since the follower last applied a change to the replica (grows on an idle gallery; read with revisions_behind).',
      (s) => (s.last_sync_at ? (Date.now() - Date.parse(s.last_sync_at)) / 1000 : null),
    );
    fleetCounter(
      'vigil_fleet_syncs_total',
      "Collection catch-ups applied to this box's replica and index since start.",
      (s) => s.syncs,
    );
    fleetCounter(
      'vigil_fleet_revisions_applied_total',
      "Gallery change revisions applied to this box's replica since start.",
      (s) => s.revisions_applied,
    );
    fleetCounter(
      'vigil_fleet_full_copies_total',
      'Collections copied whole (new, re-created, or the change log no longer reached back) since start.',
      (s) => s.full_copies,
    );
    fleetCounter(
      'vigil_fleet_changes_pruned_total',
      "Change-log rows this box deleted as the fleet's pruner since start.",
      (s) => s.changes_pruned,
    );
  }
}

function collectionSummaries(rt: Runtime | null): Record<string, unknown>[] {
  if (!rt) return [];
  return rt.collections.searchSummary().slice(0, MAX_COLLECTION_SERIES);
}

export type MetricsAuth = 'bearer' | 'token' | 'loopback';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Whether a socket address is this host (127.0.0.0/8, ::1, or IPv4-mapped loopback). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  return a === '::1' || (isIP(a) === 4 && a.startsWith('127.'));
}

/**
 * GET /metrics guard: "bearer" = the admin API key (as every other route); "token" = a separate read-only
 * metrics token, which opens /metrics and nothing else; "loopback" = no credential, but only from this host.
 */
export function metricsGuard(
  mode: MetricsAuth,
  opts: { keys: ApiKeyStore; token: string | undefined; authEnabled: boolean },
): Koa.Middleware {
  const tokenDigest = opts.token ? digest(opts.token) : null;
  return async (ctx, next) => {
    if (mode === 'loopback') {
      if (!isLoopback(ctx.req.socket.remoteAddress)) throw Errors.metricsLoopbackOnly();
      return next();
    }
    if (mode === 'bearer' && !opts.authEnabled) return next();
    const presented = parseBearer(ctx.get('Authorization') || undefined);
    if (!presented) throw Errors.unauthorized('A valid Bearer token is required for /metrics.');
    const ok =
      mode === 'token'
        ? tokenDigest !== null && timingSafeEqual(digest(presented), tokenDigest)
        : await opts.keys.verify(presented);
    if (!ok)
      throw Errors.unauthorized(mode === 'token' ? 'The metrics token is not valid.' : 'The API key is not valid.');
    await next();
  };
}
