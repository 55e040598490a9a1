import { accessSync, constants as fsConstants, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { join, resolve as resolvePath } from 'node:path';
import type { Server } from 'node:http';
import { cpus } from 'node:os';
import si from 'systeminformation';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { effectiveMaxStreams } from '../config/streamCapacity.js';
import { Errors, type VigilError } from '../contract/errors.js';
import { createApp } from '../http/app.js';
import { RecentErrors } from '../http/errors.js';
import { replyToClientErrors } from '../http/clientError.js';
import { KEEP_ALIVE_SERVER_TIMEOUT_MS } from '../http/middleware.js';
import { VigilMetrics } from '../http/metrics.js';
import type { HostInfo, Runtime } from '../http/runtime.js';
import { InferenceEngine, resolveThreading } from '../inference/engine.js';
import { CollectionService } from '../collections/collectionService.js';
import { PersonService } from '../collections/personService.js';
import { GalleryImportService } from '../collections/galleryImport.js';
import { SearchService } from '../collections/searchService.js';
import { FaceService } from '../inference/faceService.js';
import { describePack } from '../inference/modelSummary.js';
import type { DetectionProfile } from '../inference/pipeline.js';
import { availableProviders } from '../inference/sessions.js';
import { createLogger } from '../log/logger.js';
import { PACK_JSON, installCommand, loadInstalledPack, packDir } from '../models/installed.js';
import { DAEMON_ALLOCATOR_LIBRARY, memoryAllocator } from '../system/allocator.js';
import { resolveCatalog, resolveDefaultThreshold } from '../models/catalog.js';
import { LivenessManager } from '../addons/livenessManager.js';
import { requireLiveness } from '../addons/livenessFiles.js';
import type { LivenessPolicy } from '../inference/faceService.js';
import { ApiKeyStore } from '../auth/apiKeyStore.js';
import { KioskTokenStore } from '../auth/kioskTokenStore.js';
import { AuditLog } from '../users/auditLog.js';
import { AccountHousekeeping } from '../users/housekeeping.js';
import { UserService } from '../users/userService.js';
import { UserStore } from '../users/userStore.js';
import { CollectionStore } from '../collections/collectionStore.js';
import { GalleryFollower } from '../collections/fleetFollower.js';
import { PgGallery } from '../collections/pgGallery.js';
import type { GalleryWriter } from '../collections/galleryWriter.js';
import { SqliteGallery } from '../collections/sqliteGallery.js';
import { CollectionPurger } from '../collections/collectionPurger.js';
import { hostname } from 'node:os';
import type pg from 'pg';
import {
  isConnectionError,
  migratePostgres,
  openPool,
  storeRefusal,
  storeServer,
  type PgOptions,
} from '../store/postgres.js';
import { CursorCodec } from '../store/cursors.js';
import { errnoReason, openDatabase } from '../store/database.js';
import type { Compaction } from '../store/spaceReclaimer.js';
import { resolveBoxId } from '../store/boxIdentity.js';
import { SearchIndexes } from '../search/indexManager.js';
import { walkerProblem } from '../search/hnswGraph.js';
import { RunStore } from '../scrapers/runStore.js';
import { PgRunStore } from '../scrapers/pgRunStore.js';
import type { RunRepository } from '../scrapers/runRepository.js';
import { RunWebhooks } from '../scrapers/runWebhooks.js';
import { ScrapeRunService } from '../scrapers/runService.js';
import { ScrapeWorker } from '../scrapers/scrapeWorker.js';
import { UsageMeter } from '../workspaces/usageMeter.js';
import { WorkspaceStore } from '../workspaces/workspaceStore.js';
import { PgWorkspaceStore } from '../workspaces/pgWorkspaceStore.js';
import { CredentialCipher } from '../store/credentialCipher.js';
import { removeStaleStaging } from './backup.js';
import { MonitorManager } from '../monitors/monitorManager.js';
import type { SessionDeps } from '../monitors/monitorSession.js';
import { MonitorStore } from '../monitors/monitorStore.js';
import { FleetMonitorDirectory } from '../monitors/fleetDirectory.js';
import { EventHistory } from '../events/eventHistory.js';
import { EventForwarder } from '../events/eventForwarder.js';
import { EventService } from '../events/eventService.js';
import { PersonTimeline } from '../events/personTimeline.js';
import { UnknownService } from '../events/unknownService.js';
import { UnknownStore } from '../events/unknownStore.js';
import { PgHistory } from '../events/pgHistory.js';
import { HistoryStore } from '../events/historyStore.js';
import { MqttPublisher } from '../events/mqttPublisher.js';
import { SnapshotStore } from '../events/snapshotStore.js';
import { ClipStore } from '../events/clipStore.js';
import { WebhookEventOutput } from '../events/webhookOutput.js';
import { WebhookOutbox } from '../webhooks/webhookOutbox.js';
import { WebhookService } from '../webhooks/webhookService.js';
import { WebhookStore } from '../webhooks/webhookStore.js';
import { SettingsService } from '../config/settingsService.js';
import { monitorSessionSettings, mqttOptions, reviewGates, settingsAppliers } from './daemonSettings.js';

export interface Daemon {
  runtime: Runtime;
  server: Server;
  /** Resolves when models are loaded and warm (the daemon is ready). Rejects if that failed. */
  ready: Promise<void>;
  url: string;
  close(): Promise<void>;
}

async function hostInfo(): Promise<HostInfo> {
  const [os, cpu] = await Promise.all([si.osInfo(), si.cpu()]);
  return {
    os: `${os.distro} ${os.release}`.trim() || process.platform,
    architecture: os.arch || process.arch,
    cpu: { model: `${cpu.manufacturer} ${cpu.brand}`.trim(), logical_cores: cpus().length },
  };
}

/**
 * Starts the daemon: database and API key first (fatal if wrong), then the HTTP listener so health can
 * answer "not_ready", then the models. The service never downloads anything at startup.
 */
export async function startDaemon(loaded: LoadedConfig): Promise<Daemon> {
  const { config } = loaded;
  const log = createLogger(config.server.log_level);
  // A file the last daemon closed in order is known good at open (its clean-shutdown marker). After a crash,
  // quick_check runs in a worker thread once the daemon is ready: nothing waits for it but the work that
  // rewrites pages all over the file (integrityGate.ts has the rule). The snapshot rows' CRC check starts
  // once the models are loaded: on a 2-core box it took CPU from the model load the first search waits for.
  let modelsSettled!: () => void;
  const modelsLoaded = new Promise<void>((resolve) => {
    modelsSettled = resolve;
  });
  let readySettled!: () => void;
  const daemonReady = new Promise<void>((resolve) => {
    readySettled = resolve;
  });
  const db = openDatabase(config.server.data_dir, undefined, {
    integrity: 'background',
    integrityAfter: daemonReady,
    reserveBytes: config.server.storage_reserve_bytes,
    compactAtStartMaxBytes: config.server.compact_at_start_max_bytes || undefined,
  });
  // Each start says which migrations it applied (an upgrade's first start) and the schema it runs on.
  log.info(
    { schema_version: db.schemaVersion, applied: db.migrationsApplied },
    db.migrationsApplied.length ? 'database migrations applied' : 'database schema up to date',
  );
  logCompaction(db.compaction, log);
  // Deleted events and persons leave free pages no delete asks about: looked at every 5 minutes.
  db.space.every(300_000);
  // What a backup or restore killed mid-way left in the data dir (a copy of the whole database each).
  const staleStaging = removeStaleStaging(config.server.data_dir);
  if (staleStaging.length) log.info({ removed: staleStaging }, 'removed the staging folders of unfinished backups');
  let checkStarted = 0;
  void daemonReady.then(() => (checkStarted = performance.now()));
  const integrityOk = db.integrityChecked.then((result) => {
    if (result === 'ok' && db.integrityProof === 'quick_check')
      log.info({ check_ms: Math.round(performance.now() - checkStarted) }, 'database integrity check passed');
    else if (result !== 'ok' && db.db.open)
      log.error(
        { quick_check: result, path: db.path },
        'database integrity check failed: the service stays not_ready and serves nothing',
      );
    return result === 'ok';
  });
  let engine: InferenceEngine | null = null;
  let scrapes: ScrapeRunService | null = null;
  let outputs: { history: EventHistory; outbox: WebhookOutbox; mqtt: MqttPublisher | null } | null = null;
  let fleetPool: pg.Pool | null = null;
  try {
    const keys = new ApiKeyStore(db.db);
    const users = new UserService(new UserStore(db.db), {
      idleMs: config.auth.session_idle_minutes * 60_000,
      maxMs: config.auth.session_max_hours * 3_600_000,
    });
    if (config.auth.api_key) {
      const outcome = keys.ensureKey(config.auth.api_key);
      if (outcome !== 'unchanged') log.info({ outcome }, 'API key stored');
    }
    if (config.auth.enabled && !keys.hasActiveKey()) {
      throw Errors.apiKeyMissing();
    }
    const systemProfile: DetectionProfile = {
      input_sizes: config.detection.input_sizes as [number, number][],
      threshold: config.detection.threshold,
      nms_threshold: config.detection.nms_threshold,
      single_face_selection: config.detection.single_face_selection,
    };
    const catalog = await resolveCatalog(config.server.model_catalog);
    const inc = config.inference;
    // An unknown pack fails later, where the pack is loaded, with the list of known packs.
    const defaultThreshold = resolveDefaultThreshold(
      inc.default_threshold,
      Object.hasOwn(catalog.packs, inc.model_pack) ? catalog.packs[inc.model_pack] : undefined,
    );
    // Absent keys (legacy files) mean disabled; nothing in a request can change these.
    const liveness: LivenessPolicy | null = inc.addons.includes('liveness')
      ? {
          mode: inc.liveness_mode,
          threshold: inc.liveness_threshold,
          compareScope: inc.liveness_compare_scope,
          onRegistration: inc.liveness_on_registration,
        }
      : null;
    const livenessManager = new LivenessManager({
      catalog,
      modelsDir: config.server.models_dir,
      configFile: loaded.file ? resolvePath(loaded.file) : null,
      enabled: liveness !== null,
      mirror: config.addons.mirror,
      log,
    });
    const store = new CollectionStore(db.db);
    const cc = config.collections;
    const indexes = new SearchIndexes(store, {
      threads: cc.search_threads,
      int8Rerank: cc.int8_rerank,
      dir: join(config.server.data_dir, 'search-indexes'),
      dbPath: db.path,
      buildThreads: cc.index_build_threads,
      rebuildRatio: cc.hnsw_rebuild_ratio,
      rebuildIntervalMs: cc.hnsw_rebuild_interval_seconds * 1000,
      graphMemory: cc.hnsw_memory,
      snapshotAfterChanges: cc.snapshot_after_changes,
      verifyAfter: modelsLoaded,
    });
    let active: Runtime['inference'] = null;
    const cursors = CursorCodec.open(config.server.data_dir);
    const audit = new AuditLog(db.db, cursors);
    // Fleet mode: the gallery is in PostgreSQL; this file is the box's replica, kept current by the follower.
    const boxId = resolveBoxId(db.db, config.server.box_id, config.store.backend, hostname());
    let fleet: { gallery: PgGallery; follower: GalleryFollower; pool: pg.Pool; pgOptions: PgOptions } | null = null;
    let fleetSchemaVersion: number | null = null;
    if (config.store.backend === 'postgres') {
      const pgOptions: PgOptions = {
        url: config.store.url!,
        password: process.env.VIGIL_STORE_PASSWORD,
        passwordFile: config.store.password_file,
        poolSize: config.store.pool_size,
        applicationName: `vigil:${boxId}`,
      };
      const pool = openPool(pgOptions);
      fleetPool = pool;
      try {
        const migrated = await migratePostgres(pool);
        fleetSchemaVersion = migrated.schemaVersion;
        log.info(
          { schema_version: migrated.schemaVersion, applied: migrated.applied },
          migrated.applied.length ? 'fleet: PostgreSQL migrations applied' : 'fleet: PostgreSQL schema up to date',
        );
      } catch (e) {
        // Refused (password, database, privilege): configuration, exit 16, which the unit does not restart.
        const refused = storeRefusal(e, pgOptions.url);
        if (refused) throw refused;
        // Unreachable (down, restarting, not up yet at boot): transient. The box serves its replica (degraded)
        // and the follower reconnects by itself, so no restart is needed; stderr says so for the journal.
        if (!isConnectionError(e)) throw e;
        log.warn({ err: e }, 'fleet: the gallery database is unreachable at startup; serving the local replica');
        process.stderr.write(
          `vigil: warning: ${Errors.storeUnavailable.code}: [store] PostgreSQL at ${storeServer(pgOptions.url)} is unreachable (${(e as Error).message}); serving the local replica (degraded) and reconnecting every second\n`,
        );
        // The follower applies the migrations (new tables of this version included) when it connects.
      }
      let follower: GalleryFollower | null = null;
      const gallery = new PgGallery(pool, boxId, (id) => follower!.sync(id));
      follower = new GalleryFollower(
        gallery,
        store,
        indexes,
        pgOptions,
        {
          intervalMs: config.store.follow_interval_seconds * 1000,
          retentionSeconds: config.store.change_log_retention_seconds,
          pruneIntervalSeconds: config.store.change_log_prune_interval_seconds,
        },
        log,
      );
      fleet = { gallery, follower, pool, pgOptions };
    }
    // The one gallery writer every service uses: PostgreSQL (then this box's replica) or the local file.
    // Deleted collections' rows go in the background, once the database is known good (after a crash: checked).
    const purges = new CollectionPurger(store, db.space, log);
    purges.start(db.integrityChecked);
    const writer: GalleryWriter =
      fleet?.gallery ??
      new SqliteGallery(store, indexes, { purger: purges, minRows: config.collections.background_delete_min_rows });
    const collections = new CollectionService(
      store,
      indexes,
      cursors,
      {
        collections: config.collections,
        defaultThreshold: defaultThreshold.value,
        systemProfile,
      },
      () => active?.model ?? null,
      writer,
    );
    const gates = reviewGates(config.registration);
    const persons = new PersonService(
      collections,
      store,
      indexes,
      cursors,
      () => {
        if (!active) throw Errors.serviceNotReady();
        return active.engine;
      },
      {
        maxImages: config.server.max_registration_images,
        maxImageBytes: config.server.max_image_bytes,
        maxImagePixels: config.server.max_image_pixels,
        maxDetectedFaces: config.detection.max_detected_faces,
        gates,
        liveness: liveness?.onRegistration ? liveness : null,
      },
      writer,
    );
    let monitorDeps: SessionDeps | null = null;
    const mc = config.monitors;
    // The box key: camera credentials and webhook signing secrets are stored encrypted with it.
    const boxCipher = CredentialCipher.open(config.server.data_dir);
    const monitors = new MonitorManager(
      new MonitorStore(db.db, boxCipher),
      collections,
      cursors,
      effectiveMaxStreams(mc),
      () => monitorDeps,
      log,
      boxId,
    );
    warnSmallThreadpool(effectiveMaxStreams(mc), log);
    // Fleet mode: this box publishes its monitors to the fleet's directory (they stay in its own file).
    const monitorDirectory = fleet
      ? new FleetMonitorDirectory(
          fleet.pool,
          boxId,
          () => monitors.all(),
          { intervalMs: config.store.follow_interval_seconds * 1000 },
          log,
        )
      : null;
    if (monitorDirectory) monitors.setDirectory(monitorDirectory);
    // The event history and its outputs: every monitor event is written to SQLite in batches, with the
    // webhook outbox and the MQTT queue in the same transaction.
    const ev = config.events,
      wh = config.webhooks,
      mq = config.mqtt;
    const historyStore = new HistoryStore(db.db);
    const snapshots = new SnapshotStore(config.server.data_dir, {
      maxSide: ev.snapshot_max_side,
      cropMargin: ev.crop_margin,
      cropMaxSide: ev.crop_max_side,
      quality: ev.jpeg_quality,
      storage: db.storage,
    });
    const history = new EventHistory(
      historyStore,
      snapshots,
      {
        flushIntervalMs: ev.flush_interval_ms,
        snapshots: ev.snapshots,
        retention: {
          maxAgeDays: ev.max_age_days,
          maxEvents: ev.max_events,
          maxSnapshotBytes: ev.max_snapshot_bytes,
          intervalMs: ev.retention_interval_seconds * 1000,
        },
        boxId,
        storage: db.storage,
      },
      log,
    );
    // Clips a crash left recording keep their whole fragments (before the orphan sweep of history.recover()).
    const clipStore = new ClipStore(snapshots, historyStore, log, db.storage);
    clipStore.recover();
    history.recover();
    const webhookStore = new WebhookStore(db.db, boxCipher);
    const encryptedSecrets = webhookStore.encryptPlaintextSecrets();
    if (encryptedSecrets) log.info({ webhooks: encryptedSecrets }, 'webhook signing secrets encrypted at rest');
    const retry = {
      firstRetryMs: wh.first_retry_seconds * 1000,
      maxDelayMs: wh.max_retry_delay_seconds * 1000,
      jitter: wh.jitter,
    };
    const outbox = new WebhookOutbox(
      webhookStore,
      {
        timeoutMs: wh.timeout_seconds * 1000,
        retry,
        disableAfterFailures: wh.disable_after_failures,
        maxPendingPerEndpoint: wh.max_pending_per_endpoint,
        logSize: wh.log_size,
        maxRedirects: wh.max_redirects,
      },
      log,
    );
    history.addOutput(new WebhookEventOutput(outbox));
    const metrics = new VigilMetrics();
    history.addOutput(metrics.eventOutput);
    // Always built, so [mqtt] enabled can change while the daemon runs (it publishes nothing while off).
    const mqtt = new MqttPublisher(db.db, historyStore, mqttOptions(mq), () => monitors.all(), log, mq.enabled);
    history.addOutput(mqtt);
    monitors.observe({
      changed: (m, previous) => mqtt.monitorChanged(m, previous),
      deleted: (id, previous) =>
        mqtt.monitorDeleted(
          id,
          previous.zones.map((z) => z.name),
        ),
      motion: (id, active) => mqtt.motionChanged(id, active),
    });
    // Fleet mode: the local history is the durable queue; the forwarder copies it to the fleet's history.
    const fleetHistory = fleet ? new PgHistory(fleet.pool) : null;
    const fleetEvents = fleetHistory
      ? {
          pg: fleetHistory,
          boxId,
          forwarder: new EventForwarder(
            historyStore,
            fleetHistory,
            {
              boxId,
              intervalMs: config.store.follow_interval_seconds * 1000,
              retention: {
                maxAgeDays: ev.max_age_days,
                maxEvents: ev.max_events,
                intervalMs: ev.retention_interval_seconds * 1000,
              },
            },
            log,
          ),
        }
      : null;
    if (fleetEvents) history.addOutput(fleetEvents.forwarder);
    outputs = { history, outbox, mqtt };
    const events = new EventService(
      historyStore,
      history,
      snapshots,
      persons,
      collections,
      cursors,
      {
        mqtt,
        mqttPrefix: mq.topic_prefix,
        webhooks: webhookStore,
        retry,
        retention: {
          max_age_days: ev.max_age_days,
          max_events: ev.max_events,
          max_snapshot_bytes: ev.max_snapshot_bytes,
        },
      },
      fleetEvents,
    );
    // Unknown visitors (issue 42): this box's unknown tracks grouped by face, with their crops.
    const unknowns = new UnknownService(
      new UnknownStore(db.db),
      collections,
      persons,
      events,
      cursors,
      config.server.data_dir,
      {
        threshold: mc.unknown_threshold,
        crops: mc.unknown_crops,
        jpegQuality: ev.jpeg_quality,
        storage: db.storage,
        pendingEvents: () => history.pendingWrites,
      },
      log,
    );
    const webhooks = new WebhookService(webhookStore, outbox, cursors, { allowHttp: wh.allow_http });
    // Scrapes run in a low-priority child process; unfinished runs of a previous process are re-queued.
    // Fleet mode: workspaces, keys, usage and runs in PostgreSQL (shared, metered fleet-wide); else SQLite.
    const sc = config.scrapers;
    const runStore: RunRepository = fleet
      ? new PgRunStore(fleet.pool, boxId, sc.free_items_per_month, sc.free_reviews_per_month, sc.seen_items_per_kind)
      : new RunStore(
          db.db,
          new UsageMeter(db.db, sc.free_items_per_month, sc.free_reviews_per_month),
          sc.seen_items_per_kind,
        );
    const workspaces = fleet ? new PgWorkspaceStore(fleet.pool, fleet.pgOptions, log) : new WorkspaceStore(db.db);
    if (workspaces instanceof PgWorkspaceStore) workspaces.listen();
    scrapes = new ScrapeRunService(runStore, new ScrapeWorker(config, log), config, log, cursors);
    // Run webhooks: each finished run is queued in the shared outbox for its own workspace's endpoints.
    const runWebhooks = new RunWebhooks(outbox);
    scrapes.onRecorded((row) => runWebhooks.recorded(row));
    scrapes.onFinished(metrics.scrapeFinished);
    // Settings changed while running (PATCH /v1/settings, SIGHUP): applied here where a key can be.
    const settings = new SettingsService(
      loaded,
      settingsAppliers({
        log,
        mqtt,
        metrics,
        history,
        events,
        forwarder: fleetEvents?.forwarder ?? null,
        systemProfile,
        gates,
        monitors,
        sessionDeps: () => monitorDeps,
      }),
      { env: loaded.env, log, stopping: () => closed },
    );
    const runtime: Runtime = {
      loaded,
      settings,
      log,
      db,
      keys,
      kiosk: new KioskTokenStore(db.db),
      users,
      audit,
      recentErrors: new RecentErrors(),
      metrics,
      host: await hostInfo(),
      inference: null,
      startedAt: new Date(),
      collections,
      persons,
      galleryImport: new GalleryImportService(collections, store, indexes, writer),
      liveness: livenessManager,
      monitors,
      workspaces,
      scrapes,
      events,
      unknowns,
      timeline: new PersonTimeline(events, persons),
      webhooks,
      fleet: fleet ? { boxId, follower: fleet.follower, schemaVersion: fleetSchemaVersion } : null,
      purges,
    };
    metrics.attach(runtime);
    const housekeeping = new AccountHousekeeping(users, audit, config.audit.retention_days, log);
    const { app } = createApp(runtime);
    const server = app.listen(config.server.port, config.server.host);
    replyToClientErrors(server, log);
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', (e: NodeJS.ErrnoException) => {
        const why =
          e.code === 'EADDRINUSE'
            ? 'the address is already in use'
            : e.code === 'EACCES'
              ? 'permission denied (ports below 1024 need privileges)'
              : e.code === 'EADDRNOTAVAIL'
                ? 'the host address is not on this machine'
                : e.message;
        reject(
          ['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL'].includes(e.code ?? '')
            ? Errors.portInUse(config.server.host, config.server.port, why)
            : e,
        );
      });
    });
    // Uploads are bounded by the request deadline, not by Node's own shorter defaults.
    server.requestTimeout = (config.server.request_timeout_seconds + 5) * 1000;
    // Idle keep-alive connections close well after the time advertised to clients (see keepAliveHint).
    server.keepAliveTimeout = KEEP_ALIVE_SERVER_TIMEOUT_MS;
    const address = server.address();
    const url =
      typeof address === 'object' && address
        ? `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
        : '';
    log.info({ url, config_file: loaded.file }, 'listening');
    // Until a user exists, the sign-in page creates the first admin with this code (or: vigil users add).
    const setupCode = config.auth.enabled ? users.issueSetupCode() : null;
    if (setupCode)
      log.warn(
        { setup_code: setupCode, url },
        `no user exists yet: open the web UI and create the first admin with the set-up code ${setupCode} (valid until a user exists), or run: vigil users add NAME --role admin`,
      );
    housekeeping.start();
    if (memoryAllocator() === 'glibc') {
      log.warn(
        { memory_allocator: 'glibc' },
        `glibc's malloc keeps what the daemon's threads free (about 130 MB more resident memory with four cameras): install libjemalloc2 and start with LD_PRELOAD=${DAEMON_ALLOCATOR_LIBRARY}, as the systemd unit does`,
      );
    }
    if (walkerProblem)
      log.warn(
        { hnsw_walker: walkerProblem },
        "HNSW collections are searched with usearch's own binding: the native walker (vigil-hnsw-walk) did not load",
      );
    // Background writers start at once; a database that fails its check (after a crash) stops them again.
    const startedScrapes = scrapes;
    void startedScrapes
      .start()
      .catch((e: unknown) => log.error({ err: e }, 'scrape runs could not be re-queued at start'));
    history.start();
    unknowns.start();
    fleetEvents?.forwarder.start();
    monitorDirectory?.start();
    outbox.start();
    mqtt.start();
    void integrityOk.then(async (ok) => {
      if (ok || closed) return;
      await Promise.all([monitors.close(), startedScrapes.close()]);
      await history.close();
      await Promise.all([outbox.close(), mqtt?.close(), fleetEvents?.forwarder.close(), monitorDirectory?.close()]);
    });

    let closed = false;
    const ready = (async () => {
      const pack = await loadInstalledPack(config.server.models_dir, config.inference.model_pack, catalog);
      // Enabled but missing or corrupt stops startup with the fix; startup never downloads.
      const livenessModels = liveness ? await requireLiveness(catalog, config.server.models_dir) : undefined;
      const threading = resolveThreading(
        config.inference.max_concurrency,
        config.inference.intra_op_threads,
        undefined,
        config.inference.execution_providers.every((p) => p === 'cpu'),
        config.inference.jobs_per_worker,
      );
      const starting = InferenceEngine.start({
        pack,
        providers: config.inference.execution_providers,
        deviceId: config.inference.device_id,
        workers: threading.workers,
        jobsPerWorker: threading.jobsPerWorker,
        intraOpThreads: threading.intraOpThreads,
        aloneIntraOpThreads: threading.aloneIntraOpThreads,
        graphOptimization: config.inference.graph_optimization,
        warmupSizes: systemProfile.input_sizes,
        ...(livenessModels ? { liveness: livenessModels } : {}),
        decode: {
          timeoutMs: config.server.image_decode_timeout_seconds * 1000,
          maxSide: config.server.max_image_side,
          maxAspectRatio: config.server.max_image_aspect_ratio,
        },
      });
      // Eager collections load (snapshot file or SQLite) while the inference workers load and warm up
      // their models on other threads; both are done before the service reports ready.
      // Fleet mode: catch the replica up with PostgreSQL (or start degraded from it) before indexes load.
      if (fleet) await fleet.follower.start();
      const loadStarted = performance.now();
      const eager = indexes.loadEager(store.allCollections());
      log.info({ collections: eager.built, ms: Math.round(performance.now() - loadStarted) }, 'search indexes loaded');
      engine = await starting.finally(modelsSettled);
      engine.observer = metrics.engineObserver;
      const model = describePack(pack, config.inference.execution_providers[0]!, livenessModels);
      const faces = new FaceService(
        engine,
        systemProfile,
        { maxBytes: config.server.max_image_bytes, maxPixels: config.server.max_image_pixels },
        config.detection.max_detected_faces,
        defaultThreshold.value,
        liveness,
      );
      if (eager.failed.length)
        log.error(
          { collections: eager.failed },
          'search indexes could not be built; those collections answer 503 search_index_unavailable until rebuilt',
        );
      active = {
        engine,
        faces,
        model,
        defaultThreshold,
        providers: config.inference.execution_providers,
        availableProviders: availableProviders(),
        systemProfile,
        search: new SearchService(collections, store, indexes, faces),
      };
      active.search.observer = metrics.searchObserver;
      runtime.inference = active;
      const search = active.search,
        inferenceEngine = engine;
      monitorDeps = {
        analyze: (request, signal) => inferenceEngine.analyze(request, signal),
        collection: (id) => collections.getBound(id),
        identify: (c, embeddings, threshold) => search.identify(c, embeddings, threshold),
        rank: (c, embedding, k) => search.rank(c, embedding, k),
        unknowns,
        maxDetectedFaces: config.detection.max_detected_faces,
        liveness,
        ...monitorSessionSettings(mc),
        log,
        events: history,
        clipSink: clipStore,
      };
      // Monitors do not wait for an integrity check (it starts once the daemon is ready).
      if (!closed) monitors.restore();
      log.info(
        {
          database_integrity: db.integrityProof ?? 'checking',
          pack: pack.id,
          model_digest: model.model_digest,
          providers: config.inference.execution_providers,
          ...threading,
          memory_allocator: memoryAllocator(),
          startup: engine.startup,
        },
        'ready',
      );
    })();
    // A start that failed before the engine (a missing pack): the checks run anyway.
    void ready.then(modelsSettled, modelsSettled);
    void ready.then(readySettled, readySettled);

    const close = async () => {
      if (closed) return;
      closed = true;
      housekeeping.stop();
      await livenessManager.close();
      // Stop accepting, end the preview streams (monitors) and every open connection, then wait for the
      // server: awaiting close() first would hang while a kiosk keeps an MJPEG preview open.
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      const monitorsStopped = monitors.close();
      server.closeAllConnections();
      await serverClosed;
      await scrapes?.close();
      await ready.catch(() => undefined);
      await Promise.all([monitorsStopped, monitors.close()]);
      // The sessions have stopped: write what they pushed, then stop the outputs (their queues stay on disk).
      await history.close();
      await unknowns.close();
      await Promise.all([outbox.close(), mqtt?.close(), fleetEvents?.forwarder.close(), monitorDirectory?.close()]);
      await engine?.close();
      await fleet?.follower.close();
      if (workspaces instanceof PgWorkspaceStore) await workspaces.close();
      await fleet?.pool.end().catch(() => undefined);
      await indexes.close();
      await purges.close();
      db.close();
    };
    return { runtime, server, ready, url, close };
  } catch (e) {
    const o = outputs as { history: EventHistory; outbox: WebhookOutbox; mqtt: MqttPublisher | null } | null;
    await o?.history.close();
    await Promise.all([o?.outbox.close(), o?.mqtt?.close()]);
    await (scrapes as ScrapeRunService | null)?.close();
    await (engine as InferenceEngine | null)?.close();
    await (fleetPool as pg.Pool | null)?.end().catch(() => undefined);
    db.close();
    throw e;
  }
}

/** What the one-time conversion to incremental vacuum did at open, or what the operator can do instead. */
function logCompaction(c: Compaction | null, log: ReturnType<typeof createLogger>): void {
  if (!c) return;
  if (c.done) log.info(c, 'database converted to incremental vacuum: deleted data now gives disk space back');
  else if (c.reason === 'too_big')
    log.warn(
      { ...c, command: 'vigil store compact' },
      'the database predates incremental vacuum and is too big to convert at start ([server] compact_at_start_max_bytes): deleting data does not shrink it until `vigil store compact` runs on the stopped box',
    );
  else if (c.reason === 'no_room')
    log.warn(c, 'the database predates incremental vacuum; converting it needs twice its live data free in data_dir');
  else if (c.reason === 'failed') log.warn(c, 'converting the database to incremental vacuum failed; it is unchanged');
  // not_verified: converted at the next start after an orderly stop.
}

/**
 * Each monitor keeps one GStreamer pull waiting in libuv's thread pool (gstreamer-superficial blocks a
 * pool thread per pull), and onnxruntime and sharp queue on the same pool. With the default 4 threads,
 * 4 monitors would starve inference. UV_THREADPOOL_SIZE must be set before Node starts (run-dev.sh and
 * the systemd unit do), so here we can only warn.
 */
function warnSmallThreadpool(maxStreams: number, log: ReturnType<typeof createLogger>): void {
  const size = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  if (maxStreams > 0 && size < maxStreams + 4) {
    log.warn(
      { uv_threadpool_size: size, max_streams: maxStreams, recommended: maxStreams + 8 },
      'UV_THREADPOOL_SIZE is small for [monitors].max_streams: set it in the environment before starting Vigil',
    );
  }
}

/** Creates the data directory if needed and proves it is writable (a probe file), or throws data_dir_unusable. */
export function checkDataDir(dir: string): void {
  const fail = (e: unknown): never => {
    throw Errors.dataDirUnusable(dir, errnoReason(e));
  };
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    accessSync(dir, fsConstants.W_OK);
    const probe = join(dir, `.write-probe-${process.pid}`);
    writeFileSync(probe, '');
    rmSync(probe);
  } catch (e) {
    fail(e);
  }
}

/**
 * What `vigil serve` checks before it opens anything or listens, so a misconfigured box stops with one
 * line and a distinct exit code: the data directory, the model pack's name and its installation (and
 * the liveness addon's files when enabled). Checksums are verified later, while health says not_ready.
 */
export async function preflight(loaded: LoadedConfig): Promise<void> {
  const { config } = loaded;
  checkDataDir(config.server.data_dir);
  const catalog = await resolveCatalog(config.server.model_catalog);
  const pack = config.inference.model_pack;
  if (!Object.hasOwn(catalog.packs, pack)) throw Errors.modelPackUnknown(pack, Object.keys(catalog.packs));
  const modelsDir = config.server.models_dir;
  if (!existsSync(join(packDir(modelsDir, pack), PACK_JSON)))
    throw Errors.modelNotInstalled(pack, modelsDir, installCommand(pack, modelsDir));
  if (config.inference.addons.includes('liveness')) await requireLiveness(catalog, modelsDir);
}

/**
 * Tells systemd (Type=notify) the service is ready, through the systemd-notify binary: Node cannot send on
 * a unix datagram socket. The unit sets NotifyAccess=all because the message comes from that child.
 */
export function notifySystemd(
  state: string,
  env: NodeJS.ProcessEnv = process.env,
  log?: { warn: (o: object, m: string) => void },
): Promise<boolean> {
  if (!env.NOTIFY_SOCKET) return Promise.resolve(false);
  return new Promise((resolve) => {
    const child = spawn('systemd-notify', [`--pid=${process.pid}`, state], { stdio: 'ignore', env });
    child.once('error', (e) => {
      log?.warn({ err: e.message }, 'systemd-notify could not be run; readiness is not signalled');
      resolve(false);
    });
    child.once('exit', (code) => resolve(code === 0));
  });
}

/**
 * A failed start throws: the CLI's one handler prints the line every command prints (`vigil: error: <code>: …`)
 * and exits with the code that says which kind of failure it was (exit-codes.md).
 */
export async function runServeCommand(args: { config?: string }): Promise<number> {
  const loaded = loadConfig(args.config);
  await preflight(loaded);
  const daemon = await startDaemon(loaded);
  const stop = (signal: string) => {
    daemon.runtime.log.info({ signal }, 'stopping');
    void notifySystemd('STOPPING=1');
    daemon.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  // `systemctl reload vigil` and `vigil config set`: the config file is read again and applied where it can be.
  process.on('SIGHUP', () => {
    daemon.runtime.log.info({ signal: 'SIGHUP' }, 'reloading the config file');
    daemon.runtime.settings.reload().catch(() => undefined);
  });
  try {
    await daemon.ready;
  } catch (e) {
    daemon.runtime.log.fatal({ code: (e as VigilError).code, err: e }, (e as Error).message);
    await daemon.close();
    throw e;
  }
  await notifySystemd('READY=1', process.env, daemon.runtime.log);
  return new Promise<number>(() => undefined); // runs until a signal
}
