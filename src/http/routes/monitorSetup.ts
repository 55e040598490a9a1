import { PIPELINE_PRESETS, presetOf } from '../../config/pipelinePresets.js';
import { ErrorEnvelope } from '../../contract/common.js';
import {
  MonitorPipelinesResponse,
  MonitorStoredTestRequest,
  MonitorTestRequest,
  MonitorTestResponse,
} from '../../contract/settings.js';
import { ConnectionTester } from '../../monitors/connectionTest.js';
import { exampleLaunch, parseLaunches } from '../../monitors/gstLaunch.js';
import { readJson } from '../input.js';
import type { RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

/** GStreamer's plugins do not change while the daemon runs often: one check (a child process) per 10 minutes. */
const PIPELINE_CHECK_TTL_MS = 10 * 60_000;

/** Camera set-up (Vigil extensions): the connection test and the decode pipelines this box can run. */
export function monitorSetupRoutes(rt: Runtime): RouteSpec[] {
  const maxBytes = rt.loaded.config.server.max_request_bytes;
  const tester = new ConnectionTester();
  const mc = () => rt.loaded.config.monitors;
  const options = (pipeline: string | undefined, timeoutSeconds: number) => ({
    pipeline: pipeline ?? mc().pipeline,
    latencyMs: mc().latency_ms,
    maxSide: mc().frame_max_side,
    timeoutMs: timeoutSeconds * 1000,
    jpegQuality: mc().jpeg_quality,
  });
  let checked: { at: number; problems: Promise<(string | null)[] | { error: string }> } | null = null;
  const pipelineProblems = () => {
    if (!checked || Date.now() - checked.at > PIPELINE_CHECK_TTL_MS)
      checked = {
        at: Date.now(),
        problems: parseLaunches(PIPELINE_PRESETS.map((p) => exampleLaunch(p.pipeline, 1280))),
      };
    return checked.problems;
  };
  const busy = {
    429: { schema: ErrorEnvelope, description: 'monitor_test_busy: two tests are running; retry in a few seconds.' },
  };
  return [
    {
      method: 'post',
      path: '/v1/monitors/test',
      operationId: 'test_monitor_source_v1_monitors_test_post',
      summary: 'Test Camera Connection',
      tags: ['monitors'],
      role: 'operator',
      description:
        "Vigil extension. Tries a camera before it is saved: the monitor's probe (name lookup, connect, RTSP DESCRIBE with the URL's credentials), then the decode pipeline (default [monitors] pipeline, or a pipeline id or template) until its first frame, returned as a JPEG. 200 with ok false says how far it got (stage) and why (cause, as a monitor reports it: connection_refused, unauthorized, …). Nothing is stored.",
      body: { contentType: 'application/json', schema: MonitorTestRequest },
      success: { status: 200, schema: MonitorTestResponse },
      extraResponses: busy,
      handler: async (ctx) => {
        const body = await readJson(ctx, MonitorTestRequest, maxBytes);
        const test = await tester.test(body.source.url, options(body.pipeline, body.timeout_seconds));
        ctx.state.auditDetail = { source: test.source, ok: test.ok, stage: test.stage };
        ctx.body = { request_id: ctx.state.requestId, test };
      },
    },
    {
      method: 'post',
      path: '/v1/monitors/{monitor_id}/test',
      operationId: 'test_monitor_v1_monitors__monitor_id__test_post',
      summary: 'Test Monitor Connection',
      tags: ['monitors'],
      role: 'operator',
      description:
        "Vigil extension. The connection test of a saved monitor, with its stored (encrypted) URL: probe, then the first decoded frame as a JPEG. The monitor's own session is not touched (the camera sees a second, short connection).",
      body: { contentType: 'application/json', schema: MonitorStoredTestRequest },
      success: { status: 200, schema: MonitorTestResponse },
      extraResponses: busy,
      handler: async (ctx) => {
        const url = rt.monitors.sourceUrl(ctx.params.monitor_id!);
        // The body is optional: none (or an empty one) takes the defaults.
        const body =
          ctx.request.length === 0 || !ctx.request.type
            ? MonitorStoredTestRequest.parse({})
            : await readJson(ctx, MonitorStoredTestRequest, maxBytes);
        const test = await tester.test(url, options(body.pipeline, body.timeout_seconds));
        ctx.state.auditDetail = { ok: test.ok, stage: test.stage };
        ctx.body = { request_id: ctx.state.requestId, test };
      },
    },
    {
      method: 'get',
      path: '/v1/monitor-pipelines',
      operationId: 'list_monitor_pipelines_v1_monitor_pipelines_get',
      summary: 'List Monitor Pipelines',
      tags: ['monitors'],
      role: 'operator',
      description:
        'Vigil extension. The decode pipelines a camera set-up offers for [monitors] pipeline (software, and the Jetson, VA-API and V4L2 hardware decoders), whether this box has their GStreamer elements, and which one runs now. Choose one with PATCH /v1/settings {"monitors.pipeline": "<id>"} (admin); try it first with POST /v1/monitors/test and its pipeline field.',
      success: { status: 200, schema: MonitorPipelinesResponse },
      handler: async (ctx) => {
        const problems = await pipelineProblems();
        const current = presetOf(mc().pipeline)?.id ?? 'custom';
        ctx.body = {
          request_id: ctx.state.requestId,
          current,
          pipelines: PIPELINE_PRESETS.map((p, i) => {
            const problem = 'error' in problems ? problems.error : (problems[i] ?? null);
            return { ...p, available: problem === null, problem, current: p.id === current };
          }),
        };
      },
    },
  ];
}
