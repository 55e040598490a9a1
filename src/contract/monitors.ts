import { z } from 'zod';
import { ErrorEnvelope, formInt, requestId, schemaId as id } from './common.js';
import { ID_PATTERN, isValidId } from './collections.js';
import { FaceObservation } from './faces.js';
import { IdentityBasis } from './identity.js';

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

/**
 * The detect stream (Vigil extension, as Frigate's `detect` input role): a camera's low-resolution sub-stream
 * that motion and face detection read instead of `source.url`; the main stream then gives the event pictures.
 */
const detectUrl = rtspUrl
  .nullable()
  .describe(
    "A low-resolution sub-stream of the same camera (rtsp:// or rtsps://; credentials in it are stored encrypted as the source's): motion and face detection read it, and source.url is opened for the event pictures while a face is tracked. null: everything reads source.url.",
  );

const confirmFrames = z.int().min(1).max(100);
const absenceTimeout = z.number().min(0.1).max(300);
const cooldown = z.number().min(0).max(3600);
const inferenceFps = z.number().min(0.1).max(30);
const eventBufferSize = z.int().min(10).max(10000);
const unit = z.number().min(0).max(1);
const name = z.string().min(1).max(200);
const description = z.string().max(2000);

// ---- zones, masks and the motion gate (Vigil extension) ----

/** Zone names: used in MQTT topics and Home Assistant ids as they are. */
export const ZONE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
export const MAX_ZONES = 16;
export const MAX_MASK_POLYGONS = 16;
export const MAX_POLYGON_POINTS = 64;

/** The area of a polygon (shoelace formula, absolute): 0 when its points are collinear. */
export function polygonArea(poly: readonly (readonly [number, number])[]): number {
  let a = 0;
  for (let i = 0, j = poly.length - 1; i < poly.length; j = i++)
    a += poly[j]![0] * poly[i]![1] - poly[i]![0] * poly[j]![1];
  return Math.abs(a) / 2;
}

const coordinate = z.number().min(0).max(1);
const polygon = z
  .array(z.tuple([coordinate, coordinate]))
  .min(3, 'a polygon needs at least 3 points')
  .max(MAX_POLYGON_POINTS, `a polygon has at most ${MAX_POLYGON_POINTS} points`)
  .refine((p) => polygonArea(p) > 0, 'the polygon has no area (its points are on one line)')
  .describe('[x, y] points in 0..1 of the frame (x to the right, y down), at least 3; closed automatically.');
const masks = (what: string) =>
  z.array(polygon).max(MAX_MASK_POLYGONS, `at most ${MAX_MASK_POLYGONS} polygons`).describe(what);
const motionMask = masks('Areas where motion never counts (trees, a clock, a TV): the motion gate ignores them.');
const faceMask = masks(
  'Areas where faces are ignored entirely (a poster, a TV): a face whose box centre lies inside is dropped before search and tracking, so it raises no event.',
);
export const MonitorZone = z
  .strictObject({
    name: z
      .string()
      .regex(ZONE_NAME_PATTERN, 'zone names match ^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$ (they appear in MQTT topics)'),
    polygon,
    inertia: z
      .int()
      .min(1)
      .max(10)
      .default(2)
      .describe(
        'Consecutive processed frames a face centre must be inside (or outside) before it enters (or leaves): a face on the edge does not flicker.',
      ),
  })
  .meta(id('MonitorZone'));
const zones = z
  .array(MonitorZone)
  .max(MAX_ZONES, `at most ${MAX_ZONES} zones`)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((zone, i) => {
      const key = zone.name.toLowerCase();
      if (seen.has(key))
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `zone name ${zone.name} is used twice` });
      seen.add(key);
    });
  })
  .describe(
    "Named areas of the picture: events say which zones a face was in (zones), a face entering or leaving one raises zone_enter / zone_exit, and MQTT shows each zone's occupancy. Names are unique (ignoring case).",
  );
const minFaceSize = z
  .int()
  .min(0)
  .max(4096)
  .describe(
    'Faces whose box is smaller than this (its shorter side, in pixels of the frames the monitor infers on: source.width x height in /state) are ignored; 0 = any size.',
  );
const motionFields = {
  gate: z
    .boolean()
    .nullable()
    .describe('Run the face detector only when something moves (and a keep-alive); null = [monitors.motion] gate.'),
  threshold: z
    .int()
    .min(1)
    .max(255)
    .nullable()
    .describe(
      'Sensitivity: grey-level change that counts as motion (lower = more sensitive); null = [monitors.motion].',
    ),
  min_area: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('Smallest moving blob that counts, as a share of the picture; null = [monitors.motion].'),
  keepalive_seconds: z
    .number()
    .min(0.1)
    .max(3600)
    .nullable()
    .describe('With nothing moving and no face tracked, the detector still runs this often; null = [monitors.motion].'),
};
export const MonitorMotion = z
  .strictObject({
    gate: motionFields.gate.default(null),
    threshold: motionFields.threshold.default(null),
    min_area: motionFields.min_area.default(null),
    keepalive_seconds: motionFields.keepalive_seconds.default(null),
  })
  .describe("Per-monitor motion settings; each null follows [monitors.motion] (the box's defaults).")
  .meta(id('MonitorMotion'));
export const MonitorMotionPatch = z
  .strictObject({
    gate: motionFields.gate.optional(),
    threshold: motionFields.threshold.optional(),
    min_area: motionFields.min_area.optional(),
    keepalive_seconds: motionFields.keepalive_seconds.optional(),
  })
  .meta(id('MonitorMotionPatch'));

// ---- faces over time (Vigil extension, issue 42) ----

const facesFields = {
  track_identity: z
    .boolean()
    .nullable()
    .describe(
      'Identify each track on its best frames pooled (true) or every frame alone (false); null = [monitors] track_identity.',
    ),
  group_unknowns: z
    .boolean()
    .nullable()
    .describe(
      "Group this monitor's unknown faces into unknown visitors and keep their crops (false: no unknown_id, no crops); null = [monitors] group_unknowns.",
    ),
};
export const MonitorFaces = z
  .strictObject({
    track_identity: facesFields.track_identity.default(null),
    group_unknowns: facesFields.group_unknowns.default(null),
  })
  .describe(
    "Per-monitor track identity and unknown-visitor grouping; each null follows [monitors] (the box's defaults).",
  )
  .meta(id('MonitorFaces'));
export const MonitorFacesPatch = z
  .strictObject({
    track_identity: facesFields.track_identity.optional(),
    group_unknowns: facesFields.group_unknowns.optional(),
  })
  .meta(id('MonitorFacesPatch'));
export type MonitorFacesT = z.infer<typeof MonitorFaces>;

// ---- event clips (Vigil extension, issue 41) ----

const clipsFields = {
  enabled: z
    .boolean()
    .nullable()
    .describe(
      "Record a clip of the camera's encoded stream around identity events (person_enter / unknown_enter to the exit); null = [monitors.clips] enabled.",
    ),
  pre_seconds: z
    .number()
    .min(0)
    .max(60)
    .nullable()
    .describe('Pre-roll kept in memory (from the key frame at or before it); null = [monitors.clips] pre_seconds.'),
  post_seconds: z
    .number()
    .min(0)
    .max(300)
    .nullable()
    .describe('Recorded on after the last exit; null = [monitors.clips] post_seconds.'),
};
export const MonitorClips = z
  .strictObject({
    enabled: clipsFields.enabled.default(null),
    pre_seconds: clipsFields.pre_seconds.default(null),
    post_seconds: clipsFields.post_seconds.default(null),
  })
  .describe("Per-monitor event clips; each null follows [monitors.clips] (the box's defaults).")
  .meta(id('MonitorClips'));
export const MonitorClipsPatch = z
  .strictObject({
    enabled: clipsFields.enabled.optional(),
    pre_seconds: clipsFields.pre_seconds.optional(),
    post_seconds: clipsFields.post_seconds.optional(),
  })
  .meta(id('MonitorClipsPatch'));
export type MonitorClipsT = z.infer<typeof MonitorClips>;
export type MonitorZoneT = z.infer<typeof MonitorZone>;
export type MonitorMotionT = z.infer<typeof MonitorMotion>;
export type PolygonT = [number, number][];

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
    zones: zones.default([]),
    motion_mask: motionMask.default([]),
    face_mask: faceMask.default([]),
    min_face_size: minFaceSize.default(0),
    motion: MonitorMotion.prefault({}),
    faces: MonitorFaces.prefault({}),
    detect_url: detectUrl.default(null),
    clips: MonitorClips.prefault({}),
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
    zones: zones.optional(),
    motion_mask: motionMask.optional(),
    face_mask: faceMask.optional(),
    min_face_size: minFaceSize.optional(),
    motion: MonitorMotionPatch.optional(),
    faces: MonitorFacesPatch.optional(),
    detect_url: detectUrl.optional(),
    clips: MonitorClipsPatch.optional(),
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
    zones: z.array(MonitorZone),
    motion_mask: z.array(z.array(z.tuple([z.number(), z.number()]))),
    face_mask: z.array(z.array(z.tuple([z.number(), z.number()]))),
    min_face_size: z.int(),
    motion: MonitorMotion,
    faces: MonitorFaces,
    detect_url: z
      .string()
      .nullable()
      .optional()
      .describe('The detect sub-stream, redacted as source.url is (scheme://host[:port]/path); null: none.'),
    clips: MonitorClips.optional(),
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
  zones: z.array(z.string()).describe('The zones the face is in now.'),
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
    ignored_faces: z
      .int()
      .default(0)
      .describe("Faces dropped by the monitor's face_mask or min_face_size since the session started."),
  })
  .meta(id('MonitorInferenceState'));
const normBox = z
  .looseObject({ left: z.number(), top: z.number(), width: z.number(), height: z.number() })
  .meta(id('MotionRegion'));
export const MonitorMotionState = z
  .looseObject({
    gate: z.boolean().describe('The face detector runs only when something moves (plus the keep-alive).'),
    available: z
      .boolean()
      .describe(
        'The pipeline delivers motion frames (an appsink named motion); without them every sampled frame is inferred.',
      ),
    active: z
      .boolean()
      .describe('Motion within the last [monitors.motion] off_delay_seconds (what the MQTT motion topic says).'),
    calibrating: z.boolean().describe('The detector is learning the scene (start, after a lighting change).'),
    regions: z.array(normBox).describe('Moving areas of the last motion frame (normalised).'),
    last_motion_at: z.string().nullable(),
    frames_analysed: z.int(),
    motion_frames: z.int().describe('Motion frames in which something moved.'),
    inferences_skipped: z
      .int()
      .describe('Inferences the gate saved: intervals of inference_fps with a new frame and no reason to run.'),
    inferences: z
      .looseObject({
        ungated: z.int(),
        calibrating: z.int(),
        motion: z.int(),
        confirming: z.int(),
        keepalive: z.int(),
      })
      .describe('Inferences by why they ran.'),
    region_inferences: z.int().describe('Inferences that ran on the moving region only, not on the whole frame.'),
    settings: z
      .looseObject({
        threshold: z.int(),
        min_area: z.number(),
        keepalive_seconds: z.number(),
        off_delay_seconds: z.number(),
        regions: z.boolean(),
      })
      .describe("The effective settings: the monitor's motion overrides over [monitors.motion]."),
  })
  .meta(id('MonitorMotionState'));
export const MonitorStreamsState = z
  .looseObject({
    main_open: z
      .boolean()
      .describe('The main stream is being decoded now (it is opened while a face is tracked, closed 5 s after).'),
    main: z
      .looseObject({ width: z.int().nullable(), height: z.int().nullable() })
      .describe("The main stream's frames (null before it was first opened)."),
    pictures_from_main: z
      .int()
      .describe("Analysed frames with faces whose events take their picture from the main stream's newest frame."),
    pictures_from_detect: z
      .int()
      .describe(
        'Analysed frames with faces whose events take the detect frame as their picture (the main stream was not open, or had no frame within 1 s).',
      ),
  })
  .describe('Only for a monitor with a detect_url (`source` is then the detect stream).')
  .meta(id('MonitorStreamsState'));
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
    motion: MonitorMotionState,
    streams: MonitorStreamsState.optional(),
    reconnects: z.int(),
    inference_errors: z.int(),
    last_error: lastError,
    started_at: z.string().nullable(),
  })
  .meta(id('MonitorState'));

/**
 * Why a track's exit happened (and a zone_exit's: `left_zone` when the face left the zone, else its track's
 * reason): `absent` (unseen for absence_timeout_seconds), `identity_changed` (the face
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
  'left_zone',
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
    reason: z
      .enum(EXIT_REASONS)
      .nullable()
      .optional()
      .describe('Exit events: why the track ended; zone_exit: left_zone, or why its track ended.'),
    zones: z
      .array(z.string())
      .optional()
      .describe(
        "Identity and zone events: every zone of the monitor the track's face has been in so far (Frigate's entered_zones).",
      ),
    zone: z.string().nullable().optional().describe('zone_enter / zone_exit: the zone.'),
    unknown_id: z
      .string()
      .optional()
      .describe('Events of an unknown track: the unknown visitor it was grouped with (GET /v1/unknowns/{unknown_id}).'),
    identity: IdentityBasis.optional().describe(
      "Identity and zone events: why the face has its identity (the track's frames used, best quality, runner-up margin).",
    ),
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
