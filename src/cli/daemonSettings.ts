/**
 * How the running daemon takes each live setting (src/config/settings.ts lists them; SettingsService
 * refuses to start when one has no applier here): what `vigil serve` builds at start from [mqtt] and
 * [monitors] is built by the same functions when a setting changes.
 */
import type { Logger } from 'pino';
import type { ReviewGates } from '../collections/review.js';
import { LIVE_GROUPS } from '../config/settings.js';
import { effectiveMaxStreams } from '../config/streamCapacity.js';
import type { SettingsApplier } from '../config/settingsService.js';
import type { VigilConfig } from '../config/schema.js';
import type { EventForwarder } from '../events/eventForwarder.js';
import type { EventHistory } from '../events/eventHistory.js';
import type { EventService } from '../events/eventService.js';
import type { MqttOptions, MqttPublisher } from '../events/mqttPublisher.js';
import type { VigilMetrics } from '../http/metrics.js';
import type { DetectionProfile } from '../inference/pipeline.js';
import type { MonitorManager } from '../monitors/monitorManager.js';
import type { SessionDeps } from '../monitors/monitorSession.js';

/** The MQTT publisher's options from [mqtt]. */
export function mqttOptions(mq: VigilConfig['mqtt']): MqttOptions {
  return {
    url: mq.url,
    username: mq.username,
    password: mq.password,
    clientId: mq.client_id,
    topicPrefix: mq.topic_prefix,
    qos: mq.qos,
    retain: mq.retain,
    caFile: mq.ca_file,
    certFile: mq.cert_file,
    keyFile: mq.key_file,
    tlsVerify: mq.tls_verify,
    discovery: mq.discovery,
    discoveryPrefix: mq.discovery_prefix,
    snapshots: mq.snapshots,
    queueMaxMessages: mq.queue_max_messages,
    reconnectDelayMs: mq.reconnect_delay_seconds * 1000,
    maxReconnectDelayMs: mq.max_reconnect_delay_seconds * 1000,
    keepaliveSeconds: mq.keepalive_seconds,
  };
}

/** What a monitor session takes from [monitors] (decoding, preview, re-identification). */
export function monitorSessionSettings(
  mc: VigilConfig['monitors'],
): Pick<SessionDeps, 'source' | 'preview' | 'reidentifyMs' | 'trimLetterbox' | 'faces' | 'motion' | 'clips'> {
  return {
    trimLetterbox: mc.trim_letterbox,
    faces: {
      trackIdentity: mc.track_identity,
      bankSize: mc.track_frames,
      hysteresis: mc.track_hysteresis,
      groupUnknowns: mc.group_unknowns,
      unknownThreshold: mc.unknown_threshold,
      unknownCrops: mc.unknown_crops,
    },
    source: {
      pipeline: mc.pipeline,
      latencyMs: mc.latency_ms,
      maxSide: mc.frame_max_side,
      openTimeoutMs: mc.open_timeout_seconds * 1000,
      readTimeoutMs: mc.read_timeout_seconds * 1000,
      reconnectDelayMs: mc.reconnect_delay_seconds * 1000,
    },
    preview: { fps: mc.preview_fps, quality: mc.jpeg_quality },
    reidentifyMs: mc.reidentify_interval_seconds * 1000,
    motion: mc.motion,
    clips: mc.clips,
  };
}

/** [registration] as the person service's review gates. */
export function reviewGates(r: VigilConfig['registration']): ReviewGates {
  return {
    minScore: r.min_score,
    minQuality: r.min_quality,
    minFaceSize: r.min_face_size,
    maxPoseDegrees: r.max_pose_degrees,
  };
}

export interface LiveParts {
  log: Logger;
  mqtt: MqttPublisher;
  metrics: VigilMetrics;
  history: EventHistory;
  events: EventService;
  forwarder: EventForwarder | null;
  /** The system detection profile FaceService and new collections read (changed in place). */
  systemProfile: DetectionProfile;
  /** The review gates the person service reads (changed in place). */
  gates: ReviewGates;
  monitors: MonitorManager;
  /** Null until the models are loaded (then built from the running [monitors], which the service keeps current). */
  sessionDeps: () => SessionDeps | null;
}

/** One applier per group of live keys. */
export function settingsAppliers(p: LiveParts): SettingsApplier[] {
  return [
    {
      keys: LIVE_GROUPS.log,
      apply: (next) => {
        p.log.level = next.server.log_level;
      },
    },
    {
      keys: LIVE_GROUPS.mqtt,
      apply: async (next) => {
        await p.mqtt.configure(mqttOptions(next.mqtt), next.mqtt.enabled);
        if (next.mqtt.enabled) p.metrics.mqttEnabled();
      },
    },
    {
      keys: LIVE_GROUPS.retention,
      apply: (next) => {
        const ev = next.events;
        const retention = {
          maxAgeDays: ev.max_age_days,
          maxEvents: ev.max_events,
          maxSnapshotBytes: ev.max_snapshot_bytes,
          intervalMs: ev.retention_interval_seconds * 1000,
        };
        p.history.configure({ snapshots: ev.snapshots, retention });
        p.forwarder?.setRetention(retention);
        p.events.setRetention({
          max_age_days: ev.max_age_days,
          max_events: ev.max_events,
          max_snapshot_bytes: ev.max_snapshot_bytes,
        });
      },
    },
    {
      // /v1 requests without a collection and new collections read this profile at each use.
      keys: LIVE_GROUPS.detection,
      apply: (next) => {
        p.systemProfile.threshold = next.detection.threshold;
        p.systemProfile.nms_threshold = next.detection.nms_threshold;
        p.systemProfile.single_face_selection = next.detection.single_face_selection;
      },
    },
    {
      keys: LIVE_GROUPS.registration,
      apply: (next) => void Object.assign(p.gates, reviewGates(next.registration)),
    },
    {
      // CollectionService reads the running [collections] (the object SettingsService updates) at each create.
      keys: LIVE_GROUPS.collectionDefaults,
      apply: () => undefined,
    },
    {
      keys: LIVE_GROUPS.monitors,
      apply: (next, changed) => {
        p.monitors.setMaxStreams(effectiveMaxStreams(next.monitors));
        const deps = p.sessionDeps();
        if (!deps || changed.every((k) => k === 'monitors.max_streams')) return;
        Object.assign(deps, monitorSessionSettings(next.monitors));
        p.monitors.restartSessions();
      },
    },
  ];
}
