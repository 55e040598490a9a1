import { z } from 'zod';
import { formField, formInt, requestId, schemaId as id } from './common.js';
import { ID_PATTERN, isValidId } from './collections.js';
import { FaceObservation } from './faces.js';
import { EXIT_REASONS, MonitorPerson } from './monitors.js';
import { IdentityBasis } from './identity.js';

/**
 * The durable event history (/v1/events): every monitor event, in the order the monitors pushed them,
 * with a snapshot (face crop + downscaled frame) for identity events. The ring of
 * /v1/monitors/{id}/events is unchanged; these are the same events (same ids), kept.
 */
export const MONITOR_EVENT_TYPES = [
  'person_enter',
  'person_exit',
  'unknown_enter',
  'unknown_exit',
  'monitor_error',
  'monitor_recovered',
  'zone_enter',
  'zone_exit',
] as const;
export type MonitorEventType = (typeof MONITOR_EVENT_TYPES)[number];
export const IDENTITY_EVENT_TYPES: readonly string[] = ['person_enter', 'person_exit', 'unknown_enter', 'unknown_exit'];
export const SNAPSHOT_STATES = ['none', 'pending', 'ready', 'failed', 'expired'] as const;

/** The webhook type of a monitor event: person_enter -> monitor.person_enter, monitor_error -> monitor.error. */
export const webhookTypeOf = (type: string): string => `monitor.${type.replace(/^monitor_/, '')}`;

export const EventSnapshot = z
  .looseObject({
    status: z
      .enum(SNAPSHOT_STATES)
      .describe(
        'none: no picture for this event; pending: being written; ready; failed; expired: removed by the bytes retention.',
      ),
    frame_url: z.string().nullable().describe('The downscaled frame (image/jpeg), when ready.'),
    crop_url: z.string().nullable().describe('The face crop with margin (image/jpeg), when ready.'),
    width: z.int().nullable(),
    height: z.int().nullable(),
    crop_width: z.int().nullable(),
    crop_height: z.int().nullable(),
    bytes: z.int(),
  })
  .meta(id('EventSnapshot'));

export const CLIP_STATES = ['recording', 'ready', 'failed', 'expired'] as const;

export const EventClip = z
  .looseObject({
    id: z.string().describe('The clip: the events of the tracks in view while it recorded share it.'),
    status: z
      .enum(CLIP_STATES)
      .describe(
        'recording: still being written (post-roll); ready: playable; failed: nothing could be kept; expired: removed by the bytes retention.',
      ),
    url: z
      .string()
      .nullable()
      .describe(
        'The MP4 (video/mp4, HTTP range requests): /v1/events/{event_id}/clip.mp4; while recording it answers 404 clip_not_found until ready; null when failed or expired.',
      ),
    started_at: z.string().nullable().describe('Wall-clock time of its first frame (a key frame before the pre-roll).'),
    duration_ms: z.int().describe('Its length once ready; 0 while recording.'),
    bytes: z.int(),
    end_reason: z
      .string()
      .nullable()
      .describe(
        'Why it ended: completed (post-roll done), capped (max_seconds), disk_full, stream_lost, monitor_stopped, recovered (after a crash), write_failed, record_failed (the camera stream could not be muxed, e.g. frames without timestamps: detection goes on); null while recording.',
      ),
  })
  .meta(id('EventClip'));

export const HistoryEvent = z
  .looseObject({
    id: z.uuid().describe('The same id as in /v1/monitors/{id}/events.'),
    box_id: z
      .string()
      .describe(
        'The box that recorded the event ([server] box_id). In fleet mode its pictures are kept on that box only.',
      ),
    type: z.string(),
    monitor_id: z.string(),
    collection_id: z.string().nullable(),
    occurred_at: z.string(),
    stream_epoch: z.string(),
    sequence: z.int(),
    track_id: z.string().nullable(),
    person: MonitorPerson.nullable(),
    similarity: z.number().nullable(),
    threshold: z.number().nullable(),
    matched_face_id: z.string().nullable(),
    face: FaceObservation.nullable(),
    error: z.looseObject({ code: z.string(), message: z.string() }).nullable(),
    reason: z
      .enum(EXIT_REASONS)
      .nullable()
      .describe(
        'Exit events: why the track ended (absent, identity_changed, monitor_disabled, monitor_restarted, monitor_deleted, daemon_stopped, daemon_restarted); zone_exit: left_zone, or why its track ended; null for other events.',
      ),
    zones: z
      .array(z.string())
      .nullable()
      .describe(
        "Identity and zone events: every zone of the monitor the track's face had been in up to this event (Frigate's entered_zones); null for other events and those recorded before zones existed.",
      ),
    zone: z.string().nullable().describe('zone_enter / zone_exit: the zone entered or left; null otherwise.'),
    unknown_id: z
      .string()
      .nullable()
      .describe(
        'Events of an unknown track: the unknown visitor it was grouped with (GET /v1/unknowns/{unknown_id}); null otherwise.',
      ),
    identity: IdentityBasis.nullable().describe(
      "Identity and zone events: why the face has its identity (the track's frames used, best quality, runner-up margin); null for other events and those recorded before it existed.",
    ),
    synthetic: z
      .boolean()
      .describe(
        'True for an exit made at start for a track that the previous process left open (it died: reason daemon_restarted); occurred_at is then when it was closed, not when the person left.',
      ),
    snapshot: EventSnapshot,
    clip: EventClip.nullable()
      .optional()
      .describe(
        "The event clip of its monitor's encoded stream around it ([monitors.clips]); null when it has none (clips off, not recordable, or from before clips).",
      ),
  })
  .meta(id('HistoryEvent'));

const csvOf = <T extends string>(values: readonly T[], field: string) =>
  formField(
    z
      .string()
      .max(500)
      .transform((v, ctx) => {
        const items = v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        const bad = items.find((s) => !(values as readonly string[]).includes(s));
        if (bad)
          ctx.addIssue({
            code: 'custom',
            message: `unknown ${field} ${JSON.stringify(bad)} (one of ${values.join(', ')})`,
          });
        return items as T[];
      })
      .optional(),
  );
const boolField = formField(
  z
    .enum(['true', 'false', '1', '0'])
    .transform((v) => v === 'true' || v === '1')
    .optional(),
);
const time = formField(z.iso.datetime({ offset: true }).optional());
const idField = (check: (v: string) => boolean, what: string) =>
  formField(z.string().refine(check, `${what} must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`).optional());

export const EventListQuery = z.object({
  limit: formInt(1, 500, 50),
  cursor: z.string().nullish(),
  box_id: idField((v) => ID_PATTERN.test(v), 'box_id').describe(
    'Only events recorded by this box (fleet mode: any box of the fleet).',
  ),
  monitor_id: idField((v) => ID_PATTERN.test(v), 'monitor_id'),
  collection_id: idField(isValidId, 'collection_id'),
  person_id: idField((v) => ID_PATTERN.test(v), 'person_id'),
  unknown_id: idField((v) => ID_PATTERN.test(v), 'unknown_id').describe('Only the events of this unknown visitor.'),
  type: csvOf(MONITOR_EVENT_TYPES, 'type').describe('One type or several, comma-separated.'),
  unknown_only: boolField.describe('Only unknown_enter / unknown_exit.'),
  since: time.describe('Events at or after this time (ISO 8601).'),
  until: time.describe('Events before this time (ISO 8601).'),
});
export type EventListQueryT = z.infer<typeof EventListQuery>;

/** A range delete takes the same filters; at least one of them (no accidental "delete everything"), or all=true. */
export const EventDeleteQuery = EventListQuery.omit({ limit: true, cursor: true }).extend({
  all: boolField.describe('Delete every event (needed when no filter is given).'),
});
export type EventDeleteQueryT = z.infer<typeof EventDeleteQuery>;

export const EventEnrol = z
  .strictObject({
    collection_id: z
      .string()
      .refine(isValidId)
      .optional()
      .describe("Default: the collection the event's monitor identified against."),
    person_id: z
      .string()
      .regex(ID_PATTERN)
      .describe('An existing person to add the face to, or the id of the new person (create=true).'),
    create: z.boolean().default(false).describe('Create the person from this face (with name / external_id).'),
    name: z.string().max(200).nullable().optional(),
    external_id: z.string().max(200).nullable().optional(),
    review_mode: z.enum(['off', 'standard', 'strict']).default('standard').describe('The normal registration review.'),
  })
  .meta(id('EventEnrol'));
export type EventEnrolT = z.infer<typeof EventEnrol>;

export const HistoryEventResponse = z
  .looseObject({ request_id: requestId, event: HistoryEvent })
  .meta(id('HistoryEventResponse'));
export const HistoryEventPageResponse = z
  .looseObject({
    request_id: requestId,
    events: z.array(HistoryEvent).describe('Newest first.'),
    next_cursor: z.string().nullable(),
    fleet: z
      .looseObject({
        source: z
          .enum(['database', 'local'])
          .describe(
            "database: the fleet history (every box); local: only this box's own history, because the database is unreachable.",
          ),
        degraded: z.boolean(),
        reason: z.string().nullable(),
      })
      .optional()
      .describe('Fleet mode only: where this page came from.'),
  })
  .meta(id('HistoryEventPageResponse'));
export const EventDeleteResponse = z
  .looseObject({ request_id: requestId, deleted: z.int() })
  .meta(id('EventDeleteResponse'));

export const MqttStatus = z
  .looseObject({
    enabled: z.boolean(),
    connected: z.boolean(),
    broker: z.string().nullable().describe('The broker URL without credentials.'),
    client_id: z.string().nullable(),
    topic_prefix: z.string(),
    queued: z.int().describe('Messages waiting for the broker.'),
    queue_max_messages: z.int(),
    dropped: z
      .int()
      .describe('Messages dropped because the queue was full (oldest first), since the database was created.'),
    published: z.int().describe('Messages the broker acknowledged since start.'),
    last_error: z.string().nullable(),
    connected_since: z.string().nullable(),
    discovery: z.boolean(),
  })
  .meta(id('MqttStatus'));
export const EventOutputsResponse = z
  .looseObject({
    request_id: requestId,
    history: z.looseObject({
      events: z.int(),
      snapshot_bytes: z.int(),
      oldest_at: z.string().nullable(),
      newest_at: z.string().nullable(),
      pending_writes: z.int(),
      retention: z.looseObject({ max_age_days: z.number(), max_events: z.int(), max_snapshot_bytes: z.int() }),
      removed_by_retention: z.int(),
    }),
    mqtt: MqttStatus,
    webhooks: z.looseObject({
      endpoints: z.int(),
      enabled: z.int(),
      pending_messages: z.int(),
      retry_schedule_seconds: z.array(z.number()),
    }),
    fleet: z
      .looseObject({
        box_id: z.string(),
        database: z.enum(['connected', 'disconnected']),
        since: z.string(),
        last_error: z.string().nullable(),
        forwarded_seq: z
          .int()
          .describe('The highest local history seq the fleet database has (with every row before it).'),
        backlog: z.int().describe('Local events not yet in the fleet database (they are forwarded when it answers).'),
        forwarded: z.int(),
        last_forward_at: z.string().nullable(),
        fleet: z
          .looseObject({
            events: z.int(),
            oldest_at: z.string().nullable(),
            newest_at: z.string().nullable(),
            boxes: z.array(z.looseObject({ box_id: z.string(), events: z.int(), newest_at: z.string().nullable() })),
          })
          .nullable(),
        last_retention: z.looseObject({ at: z.string(), by_age: z.int(), by_count: z.int() }).nullable(),
      })
      .optional()
      .describe("Fleet mode only: forwarding of this box's history to the fleet database."),
  })
  .meta(id('EventOutputsResponse'));

export type HistoryEventT = z.infer<typeof HistoryEvent>;
export type MqttStatusT = z.infer<typeof MqttStatus>;
