import {
  EventDeleteQuery,
  EventDeleteResponse,
  EventEnrol,
  EventListQuery,
  EventOutputsResponse,
  HistoryEventPageResponse,
  HistoryEventResponse,
  type EventEnrolT,
} from '../../contract/events.js';
import { PersonRegistrationResponse } from '../../contract/collections.js';
import { readJson, readQuery } from '../input.js';
import { requireInference } from '../ready.js';
import type { AppContext, RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';
import { parseByteRange } from '../byteRange.js';
import { Errors } from '../../contract/errors.js';

const E = '/v1/events/{event_id}';

export function eventRoutes(rt: Runtime): RouteSpec[] {
  const events = rt.events;
  const jpeg = async (ctx: AppContext, kind: 'frame' | 'crop') => {
    const body = await events.picture(ctx.params.event_id!, kind);
    ctx.set('Cache-Control', 'private, max-age=3600');
    ctx.type = 'image/jpeg';
    ctx.body = body;
  };
  return [
    {
      method: 'get',
      path: `${E}/clip.mp4`,
      operationId: 'event_clip_v1_events__event_id__clip_mp4_get',
      summary: 'Event Clip',
      tags: ['events'],
      role: 'viewer',
      description:
        "The event's clip ([monitors.clips]): the camera's own encoded stream (no re-encoding) from a key frame before the first enter to the post-roll after the last exit, as a fragmented MP4. HTTP range requests (Accept-Ranges: bytes; 206 with Content-Range; 416 range_not_satisfiable), so browsers seek in it. 404 clip_not_found while it records, when it failed or expired, or when the event has none.",
      success: { status: 200, schema: null, media: 'video/mp4', description: 'The clip (206 for a range).' },
      handler: async (ctx) => {
        const { file, size } = await events.clip(ctx.params.event_id!);
        const range = parseByteRange(ctx.get('Range') || undefined, size);
        if (range === 'unsatisfiable' || size === 0) await file.close();
        if (range === 'unsatisfiable') {
          ctx.set('Content-Range', `bytes */${size}`);
          throw Errors.rangeNotSatisfiable(ctx.get('Range'), size);
        }
        const { start, end } = range === 'all' ? { start: 0, end: size - 1 } : range;
        ctx.set('Accept-Ranges', 'bytes');
        ctx.set('Cache-Control', 'private, max-age=3600');
        ctx.type = 'video/mp4';
        if (range !== 'all') {
          ctx.status = 206;
          ctx.set('Content-Range', `bytes ${start}-${end}/${size}`);
        }
        ctx.length = end - start + 1;
        ctx.body = size === 0 ? '' : file.createReadStream({ start, end }); // closes the handle when done
      },
    },
    {
      method: 'get',
      path: '/v1/events',
      operationId: 'list_events_v1_events_get',
      summary: 'List Events',
      tags: ['events'],
      role: 'viewer',
      description:
        'The durable history of every monitor event, newest first. Filters combine (AND); the signed cursor is bound to them. type takes one type or several, comma-separated.',
      query: EventListQuery,
      success: { status: 200, schema: HistoryEventPageResponse },
      handler: async (ctx) => {
        const page = await events.list(readQuery(ctx, EventListQuery));
        ctx.body = {
          request_id: ctx.state.requestId,
          events: page.items,
          next_cursor: page.next_cursor,
          ...(page.fleet ? { fleet: page.fleet } : {}),
        };
      },
    },
    {
      method: 'delete',
      path: '/v1/events',
      operationId: 'delete_events_v1_events_delete',
      summary: 'Delete Events',
      tags: ['events'],
      role: 'operator',
      description:
        'Deletes every event matching the filters (a range: since/until, a monitor, a person, …) with its pictures. Without any filter, all=true is required.',
      query: EventDeleteQuery,
      success: { status: 200, schema: EventDeleteResponse },
      handler: async (ctx) => {
        ctx.body = {
          request_id: ctx.state.requestId,
          deleted: await events.deleteRange(readQuery(ctx, EventDeleteQuery)),
        };
      },
    },
    {
      method: 'get',
      path: '/v1/events/status',
      operationId: 'event_outputs_v1_events_status_get',
      summary: 'Event Outputs Status',
      tags: ['events'],
      role: 'operator',
      description:
        'History size and retention, the MQTT connection and queue (dropped messages included), the webhook endpoints and their backlog, and the retry schedule.',
      success: { status: 200, schema: EventOutputsResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, ...events.status() };
      },
    },
    {
      method: 'get',
      path: E,
      operationId: 'get_event_v1_events__event_id__get',
      summary: 'Get Event',
      tags: ['events'],
      role: 'viewer',
      success: { status: 200, schema: HistoryEventResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, event: await events.get(ctx.params.event_id!) };
      },
    },
    {
      method: 'delete',
      path: E,
      operationId: 'delete_event_v1_events__event_id__delete',
      summary: 'Delete Event',
      tags: ['events'],
      role: 'operator',
      success: { status: 204, schema: null },
      handler: async (ctx) => {
        await events.delete(ctx.params.event_id!);
        ctx.status = 204;
      },
    },
    {
      method: 'get',
      path: `${E}/snapshot.jpg`,
      operationId: 'event_snapshot_v1_events__event_id__snapshot_jpg_get',
      summary: 'Event Snapshot',
      tags: ['events'],
      role: 'viewer',
      success: {
        status: 200,
        schema: null,
        media: 'image/jpeg',
        description: 'The frame the face was seen in, downscaled ([events] snapshot_max_side).',
      },
      handler: (ctx) => jpeg(ctx, 'frame'),
    },
    {
      method: 'get',
      path: `${E}/crop.jpg`,
      operationId: 'event_crop_v1_events__event_id__crop_jpg_get',
      summary: 'Event Face Crop',
      tags: ['events'],
      role: 'viewer',
      success: {
        status: 200,
        schema: null,
        media: 'image/jpeg',
        description: 'The face with a margin around it ([events] crop_margin), good enough to enrol from.',
      },
      handler: (ctx) => jpeg(ctx, 'crop'),
    },
    {
      method: 'post',
      path: `${E}/enrol`,
      operationId: 'enrol_event_v1_events__event_id__enrol_post',
      summary: 'Enrol From Event',
      tags: ['events'],
      role: 'operator',
      description:
        "Adds the event's face crop to a person of the collection (create=true makes a new person), through the normal registration: detection, the review_mode review, the collection's limits. 201 with rejected_images (adding to an existing person: even when the crop is rejected; creating: 422 registration_failed).",
      body: { contentType: 'application/json', schema: EventEnrol },
      success: { status: 201, schema: PersonRegistrationResponse },
      handler: async (ctx) => {
        requireInference(rt);
        const body = (await readJson(ctx, EventEnrol, rt.loaded.config.server.max_request_bytes)) as EventEnrolT;
        const r = await events.enrol(ctx.params.event_id!, body, ctx.state.signal);
        ctx.status = 201;
        ctx.body = { request_id: ctx.state.requestId, event_id: ctx.params.event_id!, ...r };
      },
    },
  ];
}
