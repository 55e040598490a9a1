import { accessSync, constants, existsSync } from 'node:fs';
import { freemem, loadavg, totalmem } from 'node:os';
import { hostProviderReport } from '../../inference/providers.js';
import { SEARCH_PROFILES } from '../../contract/collections.js';
import { API_CONTRACT_VERSION, buildCommit, VERSION } from '../../contract/version.js';
import { onnxRuntimeVersion } from '../../inference/sessions.js';
import type { RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';
import { HealthResponse, ModelsResponse, SystemResponse } from '../../contract/system.js';
import { requireInference } from '../ready.js';
import { memoryAllocator } from '../../system/allocator.js';
import { INTEGRITY_PENDING } from '../../store/database.js';
import { effectiveMaxStreams } from '../../config/streamCapacity.js';

function pathState(path: string) {
  const can = (mode: number) => {
    try {
      accessSync(path, mode);
      return true;
    } catch {
      return false;
    }
  };
  return { path, exists: existsSync(path), readable: can(constants.R_OK), writable: can(constants.W_OK) };
}

/** The data dir as writes see it: not writable while the disk is full, with the free space and the reason. */
function storageState(rt: Runtime) {
  const st = rt.db.storage.status();
  return {
    ...(st.writable ? {} : { writable: false }),
    free_bytes: st.free_bytes,
    reserve_bytes: st.reserve_bytes,
    full_reason: st.reason,
  };
}

/**
 * Fleet mode: a box that lost the shared database still serves search and monitors from its replica, so
 * it stays ready (the upstream status values) and says `degraded: true`; writes answer 503 store_unavailable.
 */
function fleetHealth(rt: Runtime): { database_lost: boolean; body: Record<string, unknown> } {
  if (!rt.fleet) return { database_lost: false, body: {} };
  const f = rt.fleet.follower.snapshot();
  return {
    database_lost: f.state !== 'connected',
    body: { fleet: { box_id: rt.fleet.boxId, database: f.state, since: f.since, last_error: f.last_error } },
  };
}

export function systemRoutes(rt: Runtime): RouteSpec[] {
  const { config } = rt.loaded;
  return [
    {
      method: 'get',
      path: '/v1/health',
      operationId: 'health_v1_health_get',
      summary: 'Health',
      tags: ['system'],
      public: true,
      success: { status: 200, schema: HealthResponse },
      extraResponses: { 503: { schema: HealthResponse, description: 'The process is running but is not ready.' } },
      handler: async (ctx) => {
        // Ready = startup finished and the database is not known bad; not_ready uses the same body, not the error envelope.
        // Degraded = ready, but something needs the operator (a full disk) or waits (the check after a crash).
        const checking = rt.db.integrity === INTEGRITY_PENDING;
        const ready = rt.inference !== null && (rt.db.integrity === 'ok' || checking);
        const storage = rt.db.storage.status();
        const degraded: { code: string; message: string }[] = [];
        if (ready && !storage.writable)
          degraded.push({
            code: 'insufficient_storage',
            message: `The data directory is full: ${storage.reason ?? 'writes fail'}. Writes that add data answer 507 until space is freed.`,
          });
        if (ready && checking)
          degraded.push({
            code: 'database_check_running',
            message:
              'The database integrity check after an unclean stop is running; everything is served, and reclaiming disk space and purging deleted collections wait for it.',
          });
        ctx.status = ready ? 200 : 503;
        const fleet = fleetHealth(rt);
        if (ready && fleet.database_lost)
          degraded.push({
            code: 'store_unavailable',
            message:
              "The shared database is unreachable: search and monitors run from this box's replica; writes answer 503 until it returns.",
          });
        ctx.body = {
          request_id: ctx.state.requestId,
          status: !ready ? 'not_ready' : degraded.length ? 'degraded' : 'ready',
          version: API_CONTRACT_VERSION,
          vigil_version: VERSION,
          auth_enabled: config.auth.enabled,
          ...(degraded.length ? { reasons: degraded } : {}),
          ...fleet.body,
        };
      },
    },
    {
      method: 'get',
      path: '/v1/models',
      operationId: 'models_v1_models_get',
      summary: 'Models',
      tags: ['system'],
      role: 'operator',
      success: { status: 200, schema: ModelsResponse },
      handler: async (ctx) => {
        const inf = requireInference(rt);
        ctx.body = {
          request_id: ctx.state.requestId,
          models: inf.model.models,
          execution_provider: inf.model.provider,
          license: inf.model.license,
          model_id: inf.model.model_id,
          model_digest: inf.model.model_digest,
          ...(inf.model.addons ? { addons: inf.model.addons } : {}),
          recommended_threshold: inf.model.recommended_threshold,
          default_threshold: inf.defaultThreshold.value,
          default_threshold_source: inf.defaultThreshold.source,
        };
      },
    },
    {
      method: 'get',
      path: '/v1/system',
      operationId: 'system_v1_system_get',
      summary: 'System',
      tags: ['system'],
      role: 'operator',
      success: { status: 200, schema: SystemResponse },
      handler: async (ctx) => {
        const inf = requireInference(rt);
        const s = config.server,
          inc = config.inference,
          det = config.detection;
        ctx.body = {
          request_id: ctx.state.requestId,
          server_version: API_CONTRACT_VERSION,
          vigil_version: VERSION,
          vigil_commit: buildCommit(),
          os: rt.host.os,
          architecture: rt.host.architecture,
          cpu: rt.host.cpu,
          runtime: {
            mode: 'onnx',
            os: rt.host.os,
            architecture: rt.host.architecture,
            cpu: rt.host.cpu,
            node_version: process.version,
            onnx_runtime_version: onnxRuntimeVersion(),
            available_execution_providers: inf.availableProviders,
            // Every backend of the onnxruntime binding, with whether it can run here and why not.
            execution_provider_report: hostProviderReport(),
            execution_provider: inf.model.provider,
            requested_execution_providers: inc.execution_providers,
            detector_session_providers: inf.providers,
            recognizer_session_providers: inf.providers,
            strict_provider_audit: true,
            detector_input_sizes: inf.systemProfile.input_sizes,
            detection_profile: inf.systemProfile,
            cuda_runtime_version: null,
            cuda_image_version: null,
            cudnn_version: null,
            // Upstream keeps one detector session per input size; ours are shape-dynamic workers.
            detector_resolution_session_count: inf.systemProfile.input_sizes.length,
            detector_resolution_session_providers: inf.providers,
            detector_static_shape_sessions: false,
            gpus: [],
            models: inf.model.models,
            inference_concurrency: inf.engine.stats(),
            startup: inf.engine.startup,
            uptime_seconds: Math.round((Date.now() - rt.startedAt.getTime()) / 1000),
            rss_bytes: process.memoryUsage().rss,
            // jemalloc when the process was started as the systemd unit starts it (src/system/allocator.ts).
            memory_allocator: memoryAllocator(),
            // Host load for the dashboard: 1/5/15-minute load averages and memory.
            load_average: loadavg(),
            memory: { total_bytes: totalmem(), free_bytes: freemem() },
          },
          execution_provider: inf.model.provider,
          model: inf.model,
          database: {
            path: rt.db.path,
            quick_check: rt.db.integrity,
            // clean_shutdown: known good from the marker the last daemon wrote when it stopped in order.
            integrity_proof: rt.db.integrityProof,
            // Bytes on disk, and the deleted collections whose rows are still being deleted in the background.
            ...rt.db.space.space(),
            purges_pending: rt.purges?.pending() ?? [],
            migration_count: rt.db.migrationCount,
            // The highest migration applied; a build that knows fewer refuses this data dir (schema_too_new).
            schema_version: rt.db.schemaVersion,
            wal: true,
          },
          data: { ...pathState(s.data_dir), ...storageState(rt) },
          models: pathState(s.models_dir),
          stats: rt.collections.stats(),
          search: {
            backend: 'usearch_exact',
            profiles: [...SEARCH_PROFILES],
            device: 'cpu',
            compute_capability: null,
            exact: true,
            grouped_person_topk: true,
            grouped_person_topk_mode: 'host',
            threads: config.collections.search_threads,
            collections: rt.collections.searchSummary(),
          },
          api_key: { authentication_enabled: config.auth.enabled, configured: rt.keys.hasActiveKey() },
          safe_config: {
            max_image_bytes: s.max_image_bytes,
            max_image_pixels: s.max_image_pixels,
            max_registration_images: s.max_registration_images,
            max_request_bytes: s.max_request_bytes,
            request_timeout_seconds: s.request_timeout_seconds,
            inference_max_concurrency: inc.max_concurrency,
            inference_intra_op_threads: inc.intra_op_threads,
            model_pack: inc.model_pack,
            addons: inc.addons,
            auto_download_addons: config.addons.auto_download,
            liveness_mode: inc.liveness_mode,
            liveness_threshold: inc.liveness_threshold,
            liveness_compare_scope: inc.liveness_compare_scope,
            liveness_on_registration: inc.liveness_on_registration,
            default_similarity_threshold: inf.defaultThreshold.value,
            save_face_crops: config.collections.save_face_crops,
            default_search_profile: config.collections.default_search_profile,
            default_search_capacity_rows: config.collections.default_capacity_rows,
            max_search_capacity_rows: config.collections.max_capacity_rows,
            default_max_faces_per_person: config.collections.default_max_faces_per_person,
            default_search_load_policy: config.collections.default_load_policy,
            search_backend: 'usearch_exact',
            registration: config.registration,
            detector_input_sizes: det.input_sizes,
            // Upstream's shape: the detection profile itself ({input_sizes, threshold, nms_threshold, single_face_selection}).
            detection: inf.systemProfile,
            search_device_id: 0,
            search_topk_mode: 'host',
            rtsp_max_streams: effectiveMaxStreams(config.monitors),
            rtsp_preview_fps: config.monitors.preview_fps,
            max_detected_faces: det.max_detected_faces,
            cors_origins: s.cors_origins,
            web_ui_disabled: config.web.disabled,
            config_file: rt.loaded.file,
          },
          recent_errors: rt.recentErrors.list(),
          ...(rt.fleet
            ? {
                fleet: {
                  box_id: rt.fleet.boxId,
                  backend: 'postgres',
                  schema_version: rt.fleet.schemaVersion,
                  ...rt.fleet.follower.snapshot(),
                },
              }
            : {}),
        };
      },
    },
  ];
}
