import { z } from 'zod';
import { ErrorEnvelope, formInt, requestId, schemaId as id } from './common.js';
import { ID_PATTERN, isValidId } from './collections.js';
import { FaceObservation } from './faces.js';

/**
 * Monitors as the /v1 contract names them (InsightFace Server 0.3.x field names, ranges and defaults).
 * The same zod objects validate requests, type the services and become /openapi.json components.
 */

/** Why a monitor URL is refused, or null when it is a usable rtsp:// or rtsps:// URL. */
export function rtspUrlProblem(raw: string): string | null {
  if (!/^rtsps?:\/\//i.test(raw)) return 'the URL must start with rtsp:// or rtsps://';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'the URL is not valid (check the host and port)';
  }
  if (!url.hostname) return 'the URL must have a host';
  if (url.hash || raw.includes('#')) return 'the URL must not have a fragment';
  if (/[\s\0]/.test(raw)) return 'the URL must not contain whitespace or control characters';
  return null;
}

/** Why an RTSP source cannot be read (the `cause` of rtsp_source_unavailable in state and events). */
export const RTSP_CAUSES = [
  'connection_refused',
  'host_not_found',
  'not_found',
  'unauthorized',
  'not_rtsp',
  'no_video',
  'timeout',
] as const;
export type RtspCause = (typeof RTSP_CAUSES)[number];

const rtspUrl = z
  .string()
  .min(8)
  .max(2048)
  .superRefine((url, ctx) => {
    const problem = rtspUrlProblem(url);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
export const MonitorSourceInput = z
  .strictObject({ type: z.literal('rtsp').default('rtsp'), url: rtspUrl })
  .meta(id('MonitorSource-Input'));

const confirmFrames = z.int().min(1).max(100);
const absenceTimeout = z.number().min(0.1).max(300);
const cooldown = z.number().min(0).max(3600);
const inferenceFps = z.number().min(0.1).max(30);
const eventBufferSize = z.int().min(10).max(10000);
const unit = z.number().min(0).max(1);
const name = z.string().min(1).max(200);
const description = z.string().max(2000);

export const MonitorCreate = z
  .strictObject({
    id: z
      .string()
      .refine((v) => ID_PATTERN.test(v), 'id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ (_default is not allowed)'),
    name,
    description: description.default(''),
    enabled: z.boolean().default(true),
    source: MonitorSourceInput,
    collection_id: z
      .string()
      .refine(isValidId, 'collection_id must be _default or match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    inference_fps: inferenceFps.default(2),
    match_threshold: unit.nullable().default(null),
    event_buffer_size: eventBufferSize.default(1000),
    event_policy: z
      .strictObject({
        confirm_frames: confirmFrames.default(3),
        absence_timeout_seconds: absenceTimeout.default(3),
        cooldown_seconds: cooldown.default(10),
        emit_unknown: z.boolean().default(true),
      })
      .prefault({}),
    preview_enabled: z.boolean().default(false),
  })
  .meta(id('MonitorCreate'));

const nonEmpty = (v: object) => Object.values(v).some((x) => x !== undefined);
export const MonitorEventPolicyPatch = z
  .strictObject({
    confirm_frames: confirmFrames.optional(),
    absence_timeout_seconds: absenceTimeout.optional(),
    cooldown_seconds: cooldown.optional(),
    emit_unknown: z.boolean().optional(),
  })
  .refine(nonEmpty, 'event_policy needs at least one field')
  .meta(id('MonitorEventPolicyPatch'));
/** Every field optional, at least one required; explicit nulls are refused except match_threshold (null = inherit). */
export const MonitorPatch = z
  .strictObject({
    name: name.optional(),
    description: description.optional(),
    enabled: z.boolean().optional(),
    source: MonitorSourceInput.optional(),
    collection_id: z
      .string()
      .refine(isValidId, 'collection_id must be _default or match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
      .optional(),
    inference_fps: inferenceFps.optional(),
    match_threshold: unit.nullable().optional(),
    event_buffer_size: eventBufferSize.optional(),
    event_policy: MonitorEventPolicyPatch.optional(),
    preview_enabled: z.boolean().optional(),
  })
  .refine(nonEmpty, 'at least one field is required')
  .meta(id('MonitorPatch'));

export const MonitorEventPolicy = z
  .looseObject({
    confirm_frames: z.int(),
    absence_timeout_seconds: z.number(),
    cooldown_seconds: z.number(),
    emit_unknown: z.boolean(),
  })
  .meta(id('MonitorEventPolicy-Output'));
const lastError = z.union([z.record(z.string(), z.unknown()), z.string()]).nullable();
export const MonitorRuntime = z
  .looseObject({
    status: z.string(),
    connected: z.boolean(),
    stream_epoch: z.string().nullable(),
    last_frame_at: z.string().nullable(),
    last_error: lastError,
    preview_active: z.boolean(),
    preview_viewers: z.int(),
  })
  .meta(id('MonitorRuntime'));
export const Monitor = z
  .looseObject({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    enabled: z.boolean(),
    source: z.looseObject({ type: z.literal('rtsp'), url: z.string() }).meta(id('MonitorSource-Output')),
    collection_id: z.string(),
    inference_fps: z.number(),
    match_threshold: z.number().nullable(),
    event_buffer_size: z.int(),
    event_policy: MonitorEventPolicy,
    preview_enabled: z.boolean(),
    runtime: MonitorRuntime,
    created_at: z.string(),
    updated_at: z.string(),
    box_id: z
      .string()
      .describe(
        'Vigil extension: the box that runs this monitor ([server] box_id of the box it was created on). Another box lists it with runtime.status "other_box" and never starts it.',
      ),
  })
  .meta(id('Monitor'));

/** Vigil extension (fleet mode): one monitor of any box, as GET /v1/fleet/monitors lists it (never its URL). */
export const FleetMonitor = z
  .looseObject({
    box_id: z.string(),
    id: z.string(),
    name: z.string(),
    enabled: z.boolean(),
    collection_id: z.string(),
    inference_fps: z.number(),
    preview_enabled: z.boolean(),
    runtime: z.looseObject({ status: z.string(), connected: z.boolean(), last_frame_at: z.string().nullable() }),
    created_at: z.string(),
    updated_at: z.string(),
    reported_at: z.string().describe('When its box last published it (a box that is off stops publishing).'),
  })
  .meta(id('FleetMonitor'));
export type FleetMonitorT = z.infer<typeof FleetMonitor>;
export const FleetMonitorQuery = z.object({
  box_id: z
    .string()
    .regex(ID_PATTERN, 'box_id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
    .optional()
    .describe("Only this box's monitors."),
});
export const FleetMonitorListResponse = z
  .looseObject({
    request_id: requestId,
    monitors: z.array(FleetMonitor).describe('By box, then id.'),
    fleet: z
      .looseObject({ source: z.enum(['database', 'local']), degraded: z.boolean(), reason: z.string().nullable() })
      .describe(
        "database: every box's monitors; local: only this box's (sqlite mode, or the database is unreachable: degraded).",
      ),
  })
  .meta(id('FleetMonitorListResponse'));

export const MonitorPerson = z.looseObject({
  id: z.string(),
  name: z.string().nullable(),
  external_id: z.string().nullable(),
});
export const MonitorFace = z.looseObject({
  status: z.enum(['matched', 'unknown', 'liveness_blocked']),
  face: FaceObservation,
  person: MonitorPerson.nullable(),
  similarity: z.number().nullable(),
  matched_face_id: z.string().nullable(),
  track_id: z.string(),
});
export const MonitorInferenceState = z
  .looseObject({
    configured_fps: z.number(),
    actual_fps: z.number(),
    processing_ms: z.number().nullable(),
    last_frame_at: z.string().nullable(),
    last_inference_at: z.string().nullable(),
    frame_sequence: z.int(),
    decoded_frames: z.int(),
    processed_frames: z.int(),
    dropped_frames: z.int(),
    capacity_limited: z.boolean(),
    embedded_faces: z.int().default(0).describe('Faces embedded and searched since the session started.'),
    reused_identities: z
      .int()
      .default(0)
      .describe(
        'Faces that kept the identity of their confirmed track instead of being embedded again ([monitors] reidentify_interval_seconds).',
      ),
    late_frames: z
      .int()
      .default(0)
      .describe(
        'Processed frames whose processing (wait for a worker + inference) took longer than the inference interval, since the session started; capacity_limited shows only the last frame.',
      ),
  })
  .meta(id('MonitorInferenceState'));
export const MonitorState = z
  .looseObject({
    monitor_id: z.string(),
    stream_epoch: z.string().nullable(),
    status: z.string(),
    connected: z.boolean(),
    source: z
      .looseObject({ width: z.int().nullable(), height: z.int().nullable(), source_fps: z.number().nullable() })
      .meta(id('MonitorStateSource')),
    inference: MonitorInferenceState,
    threshold: z.number().nullable(),
    faces: z.array(MonitorFace),
    matched_faces: z.int(),
    unknown_faces: z.int(),
    liveness_blocked_faces: z
      .int()
      .default(0)
      .describe(
        'Faces blocked by normal-mode liveness; counted separately from unknown_faces and excluded from identity search and person_enter events.',
      ),
    preview: z
      .looseObject({ enabled: z.boolean(), active: z.boolean(), viewers: z.int(), frames: z.int() })
      .meta(id('MonitorPreviewState')),
    reconnects: z.int(),
    inference_errors: z.int(),
    last_error: lastError,
    started_at: z.string().nullable(),
  })
  .meta(id('MonitorState'));

/**
 * Why a track's exit happened: `absent` (unseen for absence_timeout_seconds), `identity_changed` (the face
 * became another person or unknown), the monitor's session ended with the face in view (`monitor_disabled`,
 * `monitor_restarted` by a patch of a restart field, `monitor_deleted`, `daemon_stopped`), or
 * `daemon_restarted`: the process that saw the enter died without closing it and the next start closed it
 * (a synthetic exit: when the person left is not known).
 */
export const EXIT_REASONS = [
  'absent',
  'identity_changed',
  'monitor_disabled',
  'monitor_restarted',
  'monitor_deleted',
  'daemon_stopped',
  'daemon_restarted',
] as const;
export type ExitReason = (typeof EXIT_REASONS)[number];
/** The reasons a running session ends for (its open tracks end with them). */
export type SessionEndReason = Extract<
  ExitReason,
  'monitor_disabled' | 'monitor_restarted' | 'monitor_deleted' | 'daemon_stopped'
>;
/** The one reason whose exits no process witnessed. */
export const SYNTHETIC_EXIT_REASON: ExitReason = 'daemon_restarted';

export const MonitorEvent = z
  .looseObject({
    id: z.uuid(),
    sequence: z.int(),
    type: z.string(),
    monitor_id: z.string(),
    stream_epoch: z.string(),
    occurred_at: z.string(),
    track_id: z.string().nullable().optional(),
    person: MonitorPerson.nullable().optional(),
    similarity: z.number().nullable().optional(),
    threshold: z.number().nullable().optional(),
    matched_face_id: z.string().nullable().optional(),
    face: FaceObservation.nullable().optional(),
    reason: z.enum(EXIT_REASONS).nullable().optional().describe('Exit events: why the track ended.'),
    error: z
      .looseObject({
        code: z.string(),
        message: z.string(),
        cause: z.enum(RTSP_CAUSES).optional().describe('rtsp_source_unavailable: why the source cannot be read.'),
      })
      .nullable()
      .optional(),
  })
  .meta(id('MonitorEvent'));

export type MonitorCreateT = z.infer<typeof MonitorCreate>;
export type MonitorPatchT = z.infer<typeof MonitorPatch>;
export type MonitorT = z.infer<typeof Monitor>;
export type MonitorRuntimeT = z.infer<typeof MonitorRuntime>;
export type MonitorStateT = z.infer<typeof MonitorState>;
export type MonitorEventT = z.infer<typeof MonitorEvent>;
export type MonitorFaceT = z.infer<typeof MonitorFace>;
export type MonitorPersonT = z.infer<typeof MonitorPerson>;
export type EventPolicy = MonitorCreateT['event_policy'];

// ---- responses and queries of the monitor routes ----

export const MonitorResponse = z.looseObject({ request_id: requestId, monitor: Monitor }).meta(id('MonitorResponse'));
export const MonitorPageResponse = z
  .looseObject({ request_id: requestId, monitors: z.array(Monitor), next_cursor: z.string().nullable() })
  .meta(id('MonitorPageResponse'));
export const MonitorStateResponse = z
  .looseObject({ request_id: requestId, state: MonitorState })
  .meta(id('MonitorStateResponse'));
export const MonitorEventPageResponse = z
  .looseObject({
    request_id: requestId,
    monitor_id: z.string(),
    stream_epoch: z.string().nullable(),
    events: z.array(MonitorEvent),
    oldest_sequence: z.int().nullable(),
    latest_sequence: z.int(),
    has_more: z.boolean(),
    truncated: z.boolean(),
    stream_reset: z.boolean(),
    next_cursor: z.string().describe('Always present: resume from here, even when no events were returned.'),
  })
  .meta(id('MonitorEventPageResponse'));

export const MonitorListQuery = z.object({ limit: formInt(1, 100, 50), cursor: z.string().nullish() });
export const MonitorEventsQuery = z.object({ cursor: z.string().nullish(), limit: formInt(1, 1000, 100) });
export const CapacityExhausted = {
  '429': { schema: ErrorEnvelope, description: 'The enabled Monitor capacity is exhausted.' },
};
