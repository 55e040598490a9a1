import { MonitorCreate, MonitorPatch, type MonitorCreateT, type MonitorPatchT } from '../../contract/monitors.js';
import { partHeaders, type PreviewViewer } from '../../monitors/previewHub.js';
import { MonitorPreviewQuery } from '../../contract/preview.js';
import {
  CapacityExhausted,
  FleetMonitorListResponse,
  FleetMonitorQuery,
  MonitorEventPageResponse,
  MonitorEventsQuery,
  MonitorListQuery,
  MonitorPageResponse,
  MonitorResponse,
  MonitorStateResponse,
} from '../../contract/monitors.js';
import { credentialCheck } from '../auth.js';
import type { AuthorizedStreams } from '../authorizedStreams.js';
import { readJson, readQuery } from '../input.js';
import { requireInference } from '../ready.js';
import type { RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

const M = '/v1/monitors/{monitor_id}';
const CRLF = Buffer.from('\r\n');

/** `streams`: where an open preview is watched, so it ends when the key or kiosk token that opened it is revoked. */
export function monitorRoutes(rt: Runtime, streams: AuthorizedStreams): RouteSpec[] {
  const maxBytes = rt.loaded.config.server.max_request_bytes;
  const monitors = rt.monitors;
  return [
    {
      method: 'post',
      path: '/v1/monitors',
      operationId: 'create_monitor_v1_monitors_post',
      summary: 'Create Monitor',
      tags: ['monitors'],
      role: 'operator',
      description:
        'Create an RTSP monitor. The URL (rtsp:// or rtsps://) is stored encrypted and always returned redacted. An enabled monitor starts at once; 429 when the stream capacity is used up.',
      body: { contentType: 'application/json', schema: MonitorCreate },
      success: { status: 201, schema: MonitorResponse },
      extraResponses: CapacityExhausted,
      handler: async (ctx) => {
        requireInference(rt);
        const body = (await readJson(ctx, MonitorCreate, maxBytes)) as MonitorCreateT;
        ctx.status = 201;
        ctx.body = { request_id: ctx.state.requestId, monitor: monitors.create(body) };
      },
    },
    {
      method: 'get',
      path: '/v1/monitors',
      operationId: 'list_monitors_v1_monitors_get',
      summary: 'List Monitors',
      tags: ['monitors'],
      role: 'viewer',
      query: MonitorListQuery,
      success: { status: 200, schema: MonitorPageResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, MonitorListQuery);
        const page = monitors.list(q.cursor, q.limit);
        ctx.body = { request_id: ctx.state.requestId, monitors: page.items, next_cursor: page.next_cursor };
      },
    },
    {
      method: 'get',
      path: '/v1/fleet/monitors',
      operationId: 'list_fleet_monitors_v1_fleet_monitors_get',
      summary: 'List Fleet Monitors',
      tags: ['monitors'],
      role: 'viewer',
      description:
        "Vigil extension. Fleet mode: every box's monitors (published by each box: name, collection, enabled, runtime status, never the URL), by box then id; box_id filters. Each box runs only its own monitors and they stay in its own file; change a monitor on its box. Sqlite mode, or the database unreachable: this box's own (fleet.source = local).",
      query: FleetMonitorQuery,
      success: { status: 200, schema: FleetMonitorListResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, FleetMonitorQuery);
        ctx.body = { request_id: ctx.state.requestId, ...(await monitors.fleetList(q.box_id)) };
      },
    },
    {
      method: 'get',
      path: M,
      operationId: 'get_monitor_v1_monitors__monitor_id__get',
      summary: 'Get Monitor',
      tags: ['monitors'],
      role: 'viewer',
      success: { status: 200, schema: MonitorResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, monitor: monitors.get(ctx.params.monitor_id!) };
      },
    },
    {
      method: 'patch',
      path: M,
      operationId: 'patch_monitor_v1_monitors__monitor_id__patch',
      summary: 'Patch Monitor',
      tags: ['monitors'],
      role: 'operator',
      description:
        'At least one field. Nulls are rejected except match_threshold (null inherits the collection threshold). Changing the URL, collection, inference_fps, match_threshold or event_policy restarts the session (new stream epoch); name, description, preview_enabled and event_buffer_size apply live.',
      body: { contentType: 'application/json', schema: MonitorPatch },
      success: { status: 200, schema: MonitorResponse },
      extraResponses: CapacityExhausted,
      handler: async (ctx) => {
        requireInference(rt);
        const body = (await readJson(ctx, MonitorPatch, maxBytes)) as MonitorPatchT;
        ctx.body = { request_id: ctx.state.requestId, monitor: monitors.patch(ctx.params.monitor_id!, body) };
      },
    },
    {
      method: 'delete',
      path: M,
      operationId: 'delete_monitor_v1_monitors__monitor_id__delete',
      summary: 'Delete Monitor',
      tags: ['monitors'],
      role: 'operator',
      success: { status: 204, schema: null },
      handler: async (ctx) => {
        monitors.delete(ctx.params.monitor_id!);
        ctx.status = 204;
      },
    },
    {
      method: 'get',
      path: `${M}/state`,
      operationId: 'monitor_state_v1_monitors__monitor_id__state_get',
      summary: 'Monitor State',
      tags: ['monitors'],
      role: 'viewer',
      kiosk: true,
      description:
        'The current RTSP detection and recognition state: faces of the last processed frame, counters and the preview.',
      success: { status: 200, schema: MonitorStateResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, state: monitors.state(ctx.params.monitor_id!) };
      },
    },
    {
      method: 'get',
      path: `${M}/events`,
      operationId: 'monitor_events_v1_monitors__monitor_id__events_get',
      summary: 'Monitor Events',
      tags: ['monitors'],
      role: 'viewer',
      description:
        'Events of the current stream epoch after the cursor. stream_reset: the cursor is from another epoch (the newest events are returned); truncated: events fell out of the ring before they were read.',
      query: MonitorEventsQuery,
      success: { status: 200, schema: MonitorEventPageResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, MonitorEventsQuery);
        ctx.body = { request_id: ctx.state.requestId, ...monitors.events(ctx.params.monitor_id!, q.cursor, q.limit) };
      },
    },
    {
      method: 'get',
      path: `${M}/preview.mjpeg`,
      operationId: 'monitor_preview_v1_monitors__monitor_id__preview_mjpeg_get',
      summary: 'Monitor Preview',
      tags: ['monitors'],
      role: 'viewer',
      kiosk: true,
      description:
        'Live Motion JPEG of the raw frames (no annotations drawn in). Each part has X-Frame-Seq (the frame number); with boxes=true the analysed frames carry their faces in X-Faces (a JSON array of PreviewFace), and while faces are in view only analysed frames are sent, so boxes are drawn on the frame they were found on. fps and width ask for less than the full rate and size (a grid of cameras). The API key is never accepted in the URL.',
      query: MonitorPreviewQuery,
      success: {
        status: 200,
        schema: null,
        media: 'multipart/x-mixed-replace',
        description: 'Live Motion JPEG preview stream.',
      },
      handler: async (ctx) => {
        const q = readQuery(ctx, MonitorPreviewQuery);
        const session = monitors.previewSession(ctx.params.monitor_id!);
        const res = ctx.res;
        ctx.status = 200;
        ctx.respond = false;
        res.writeHead(200, {
          'Content-Type': 'multipart/x-mixed-replace; boundary=frame',
          'Cache-Control': 'no-store, no-cache, must-revalidate',
          Pragma: 'no-cache',
          'X-Accel-Buffering': 'no',
        });
        const viewer: PreviewViewer = {
          write: (part) => res.write(Buffer.concat([Buffer.from(partHeaders(part, 'frame')), part.jpeg, CRLF])),
          onDrain: (listener) => res.on('drain', listener),
          end: () => res.end(),
        };
        const remove = session.preview.add(viewer, q);
        const credential = ctx.state.credential;
        const monitorId = ctx.params.monitor_id!;
        const unwatch = credential
          ? streams.add(credentialCheck(rt, credential, monitorId), () => res.end())
          : () => undefined;
        res.once('close', () => {
          remove();
          unwatch();
        });
      },
    },
  ];
}
