import {
  PersonTimelineResponse,
  TimelineQuery,
  UnknownEnrol,
  UnknownEnrolResponse,
  UnknownListQuery,
  UnknownMerge,
  UnknownPageResponse,
  UnknownResponse,
  UnknownStatusResponse,
  type UnknownEnrolT,
  type UnknownMergeT,
} from '../../contract/unknowns.js';
import { readJson, readQuery } from '../input.js';
import { requireInference } from '../ready.js';
import type { RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

const U = '/v1/unknowns/{unknown_id}';

/** Unknown visitors and the person timeline (Vigil extension, issue 42; docs/unknowns.md). */
export function unknownRoutes(rt: Runtime): RouteSpec[] {
  const unknowns = rt.unknowns;
  const maxBody = () => rt.loaded.config.server.max_request_bytes;
  return [
    {
      method: 'get',
      path: '/v1/unknowns',
      operationId: 'list_unknowns_v1_unknowns_get',
      summary: 'List Unknown Visitors',
      tags: ['unknowns'],
      role: 'viewer',
      description:
        "The monitors' unknown faces grouped into unknown visitors, last seen first: visits, cameras, first and last seen (from the event history) and the best sample crops. status=active by default (dismissed, enrolled or all).",
      query: UnknownListQuery,
      success: { status: 200, schema: UnknownPageResponse },
      handler: async (ctx) => {
        const page = unknowns.list(readQuery(ctx, UnknownListQuery));
        ctx.body = { request_id: ctx.state.requestId, unknowns: page.items, next_cursor: page.next_cursor };
      },
    },
    {
      method: 'get',
      path: U,
      operationId: 'get_unknown_v1_unknowns__unknown_id__get',
      summary: 'Get Unknown Visitor',
      tags: ['unknowns'],
      role: 'viewer',
      description:
        'One unknown visitor with its visits and newest events. An id merged into another answers with the one it joined (its id is in merged_ids).',
      success: { status: 200, schema: UnknownResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, ...(await unknowns.get(ctx.params.unknown_id!)) };
      },
    },
    {
      method: 'get',
      path: `${U}/crops/{crop_id}`,
      operationId: 'unknown_crop_v1_unknowns__unknown_id__crops__crop_id__get',
      summary: 'Unknown Visitor Crop',
      tags: ['unknowns'],
      role: 'viewer',
      success: {
        status: 200,
        schema: null,
        media: 'image/jpeg',
        description: 'A sample crop: the face with half its size of margin on every side.',
      },
      handler: async (ctx) => {
        const body = await unknowns.crop(ctx.params.unknown_id!, ctx.params.crop_id!);
        ctx.set('Cache-Control', 'private, max-age=3600');
        ctx.type = 'image/jpeg';
        ctx.body = body;
      },
    },
    {
      method: 'post',
      path: `${U}/merge`,
      operationId: 'merge_unknowns_v1_unknowns__unknown_id__merge_post',
      summary: 'Merge Unknown Visitors',
      tags: ['unknowns'],
      role: 'operator',
      description:
        'The listed unknowns join this one: their events are relabelled, their crops join (the best are kept), their ids lead here from now on, and later visits of either go to this one.',
      body: { contentType: 'application/json', schema: UnknownMerge },
      success: { status: 200, schema: UnknownResponse },
      handler: async (ctx) => {
        const body = (await readJson(ctx, UnknownMerge, maxBody())) as UnknownMergeT;
        ctx.body = {
          request_id: ctx.state.requestId,
          ...(await unknowns.merge(ctx.params.unknown_id!, body.unknown_ids)),
        };
      },
    },
    {
      method: 'post',
      path: `${U}/dismiss`,
      operationId: 'dismiss_unknown_v1_unknowns__unknown_id__dismiss_post',
      summary: 'Dismiss Unknown Visitor',
      tags: ['unknowns'],
      role: 'operator',
      description:
        'Hides the unknown from the default list. Its later visits still join it (it does not come back as a new unknown) and its events still carry its unknown_id; restore undoes it.',
      success: { status: 200, schema: UnknownStatusResponse },
      handler: async (ctx) => {
        ctx.body = {
          request_id: ctx.state.requestId,
          unknown: unknowns.setStatus(ctx.params.unknown_id!, 'dismissed'),
        };
      },
    },
    {
      method: 'post',
      path: `${U}/restore`,
      operationId: 'restore_unknown_v1_unknowns__unknown_id__restore_post',
      summary: 'Restore Unknown Visitor',
      tags: ['unknowns'],
      role: 'operator',
      description: 'A dismissed unknown is listed again (an enrolled one stays enrolled).',
      success: { status: 200, schema: UnknownStatusResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, unknown: unknowns.setStatus(ctx.params.unknown_id!, 'active') };
      },
    },
    {
      method: 'post',
      path: `${U}/enrol`,
      operationId: 'enrol_unknown_v1_unknowns__unknown_id__enrol_post',
      summary: 'Enrol Unknown Visitor',
      tags: ['unknowns'],
      role: 'operator',
      description:
        "Its best crops (max_crops) become faces of a new person (create=true) or of an existing one, through the normal registration: detection, the review_mode review, the collection's limits. The unknown is then enrolled (listed with status=enrolled); its next pass is a person_enter. 201 with rejected_images; creating with every crop rejected is 422 registration_failed.",
      body: { contentType: 'application/json', schema: UnknownEnrol },
      success: { status: 201, schema: UnknownEnrolResponse },
      handler: async (ctx) => {
        requireInference(rt);
        const body = (await readJson(ctx, UnknownEnrol, maxBody())) as UnknownEnrolT;
        const r = await unknowns.enrol(ctx.params.unknown_id!, body, ctx.state.signal);
        ctx.status = 201;
        ctx.body = { request_id: ctx.state.requestId, ...r };
      },
    },
    {
      method: 'delete',
      path: U,
      operationId: 'delete_unknown_v1_unknowns__unknown_id__delete',
      summary: 'Delete Unknown Visitor',
      tags: ['unknowns'],
      role: 'operator',
      description:
        'Deletes the unknown together with its events (and their pictures; fleet mode: from the fleet history too) and its crops.',
      success: { status: 204, schema: null },
      handler: async (ctx) => {
        await unknowns.delete(ctx.params.unknown_id!);
        ctx.status = 204;
      },
    },
    {
      method: 'get',
      path: '/v1/collections/{collection_id}/persons/{person_id}/timeline',
      operationId: 'person_timeline_v1_collections__collection_id__persons__person_id__timeline_get',
      summary: 'Person Timeline',
      tags: ['unknowns'],
      role: 'viewer',
      description:
        "Where and when the person was seen, from the event history: each visit (enter to exit, with the zones the face was in), per camera the visits, first and last seen and zones, and the person's first and last seen.",
      query: TimelineQuery,
      success: { status: 200, schema: PersonTimelineResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, TimelineQuery);
        ctx.body = {
          request_id: ctx.state.requestId,
          ...(await rt.timeline.timeline(ctx.params.collection_id!, ctx.params.person_id!, q)),
        };
      },
    },
  ];
}
