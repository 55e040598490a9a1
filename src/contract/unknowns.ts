import { z } from 'zod';
import { formField, formInt, requestId, schemaId as id } from './common.js';
import { ID_PATTERN, isValidId, Person } from './collections.js';
import { HistoryEvent } from './events.js';

/**
 * Unknown visitors (Vigil extension, issue 42): the unknown tracks of the monitors grouped by face into
 * unknowns with stable ids, and the person timeline. Shared by the REST routes, /openapi.json and the console.
 */

export const UNKNOWN_STATUSES = ['active', 'dismissed', 'enrolled'] as const;

export const UnknownCrop = z
  .looseObject({
    id: z.string(),
    url: z.string().describe('The crop (image/jpeg): the face with half its size of margin on every side.'),
    quality: z.number().describe("The frame's quality.score."),
    width: z.int(),
    height: z.int(),
    monitor_id: z.string(),
    seen_at: z.string(),
  })
  .meta(id('UnknownCrop'));

export const Unknown = z
  .looseObject({
    id: z.string().describe('Stable while the unknown lives; a merged-away id keeps leading here (merged_ids).'),
    status: z
      .enum(UNKNOWN_STATUSES)
      .describe(
        'active; dismissed (hidden from the default list, still grouped so the visitor does not come back as new); enrolled (its crops became a person).',
      ),
    first_seen_at: z.string().describe('Its oldest event still in the history.'),
    last_seen_at: z.string(),
    visits: z.int().describe('Its unknown_enter events still in the history (one per pass in front of a camera).'),
    cameras: z.array(z.string()).describe('The monitors that saw it.'),
    crops: z.array(UnknownCrop).describe('The best sample crops by quality, best first ([monitors] unknown_crops).'),
    enrolled_as: z
      .looseObject({ collection_id: z.string(), person_id: z.string() })
      .nullable()
      .describe('The person it was enrolled as.'),
    merged_ids: z.array(z.string()).describe('Unknowns merged into this one (their ids lead here).'),
    model: z.string().describe('The recognition model its faces were compared with (pack/recognizer).'),
  })
  .meta(id('Unknown'));
export type UnknownT = z.infer<typeof Unknown>;

/** One pass of a person or an unknown in front of a camera: an enter and its exit (when recorded). */
export const Visit = z
  .looseObject({
    monitor_id: z.string(),
    box_id: z.string(),
    track_id: z.string(),
    entered_at: z.string(),
    exited_at: z.string().nullable().describe('Null while the visit goes on (or its exit is gone from the history).'),
    seconds: z.number().nullable(),
    zones: z.array(z.string()).describe('The zones the face was in during the visit.'),
    enter_event_id: z.string().nullable(),
    exit_event_id: z.string().nullable(),
  })
  .meta(id('Visit'));
export type VisitT = z.infer<typeof Visit>;

const status = formField(
  z
    .enum([...UNKNOWN_STATUSES, 'all'])
    .default('active')
    .describe('active (default), dismissed, enrolled, or all.'),
);
export const UnknownListQuery = z.object({
  limit: formInt(1, 200, 50),
  cursor: z.string().nullish(),
  status,
  monitor_id: formField(
    z
      .string()
      .refine((v) => ID_PATTERN.test(v), 'monitor_id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
      .optional(),
  ).describe('Only unknowns this monitor saw.'),
});
export type UnknownListQueryT = z.infer<typeof UnknownListQuery>;

export const UnknownPageResponse = z
  .looseObject({
    request_id: requestId,
    unknowns: z.array(Unknown).describe('Last seen first.'),
    next_cursor: z.string().nullable(),
  })
  .meta(id('UnknownPageResponse'));

export const UnknownResponse = z
  .looseObject({
    request_id: requestId,
    unknown: Unknown,
    visits: z.array(Visit).describe('Its visits, newest first (at most 100).'),
    events: z.array(HistoryEvent).describe('Its newest events (at most 50); all of them: GET /v1/events?unknown_id=.'),
  })
  .meta(id('UnknownResponse'));

export const UnknownStatusResponse = z
  .looseObject({ request_id: requestId, unknown: Unknown })
  .meta(id('UnknownStatusResponse'));

export const UnknownMerge = z
  .strictObject({
    unknown_ids: z
      .array(z.string().regex(ID_PATTERN))
      .min(1)
      .max(50)
      .describe('The unknowns that join this one: their events, crops and ids move here.'),
  })
  .meta(id('UnknownMerge'));
export type UnknownMergeT = z.infer<typeof UnknownMerge>;

export const UnknownEnrol = z
  .strictObject({
    collection_id: z
      .string()
      .refine(isValidId)
      .optional()
      .describe('Default: the collection of the monitor that saw it last.'),
    person_id: z
      .string()
      .regex(ID_PATTERN)
      .describe('An existing person to add the crops to, or the id of the new person (create=true).'),
    create: z.boolean().default(false).describe('Create the person from the crops (with name / external_id).'),
    name: z.string().max(200).nullable().optional(),
    external_id: z.string().max(200).nullable().optional(),
    review_mode: z.enum(['off', 'standard', 'strict']).default('standard').describe('The normal registration review.'),
    max_crops: z.int().min(1).max(20).default(5).describe('At most this many of its best crops are registered.'),
  })
  .meta(id('UnknownEnrol'));
export type UnknownEnrolT = z.infer<typeof UnknownEnrol>;

export const UnknownEnrolResponse = z
  .looseObject({
    request_id: requestId,
    unknown: Unknown,
    created: z.boolean(),
    person: Person,
    faces: z.array(z.looseObject({ id: z.string() })).describe('The faces registered from its crops.'),
    rejected_images: z.array(z.looseObject({})).describe('Crops the review refused (filename crop-<crop id>.jpg).'),
  })
  .meta(id('UnknownEnrolResponse'));

// ---- the person timeline ----

export const TimelineQuery = z.object({
  since: formField(z.iso.datetime({ offset: true }).optional()).describe('Only visits at or after this time.'),
  until: formField(z.iso.datetime({ offset: true }).optional()).describe('Only visits before this time.'),
  monitor_id: formField(
    z
      .string()
      .refine((v) => ID_PATTERN.test(v), 'monitor_id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
      .optional(),
  ),
  limit: formInt(1, 1000, 200).describe('At most this many visits, newest first (the summary counts them all).'),
});
export type TimelineQueryT = z.infer<typeof TimelineQuery>;

export const TimelineCamera = z
  .looseObject({
    monitor_id: z.string(),
    visits: z.int(),
    first_seen_at: z.string(),
    last_seen_at: z.string(),
    zones: z.array(z.string()).describe('Every zone of this camera the person was in.'),
  })
  .meta(id('TimelineCamera'));

export const PersonTimelineResponse = z
  .looseObject({
    request_id: requestId,
    collection_id: z.string(),
    person: Person,
    first_seen_at: z.string().nullable(),
    last_seen_at: z.string().nullable(),
    visit_count: z.int(),
    cameras: z.array(TimelineCamera).describe('Most recently seen first.'),
    visits: z.array(Visit).describe('Newest first.'),
    truncated: z
      .boolean()
      .describe('The history held more events than one timeline reads (10,000): narrow it with since/until.'),
  })
  .meta(id('PersonTimelineResponse'));
