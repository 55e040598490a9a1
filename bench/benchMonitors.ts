/**
 * The monitors a camera bench creates on its daemon: collection 'bench', every event kept, quick absence,
 * and running once each has passed `ready` (its own measure of warmed up).
 */
import { call, type TestDaemon } from '../test/helpers/daemon.js';
import { waitFor } from '../test/helpers/monitors.js';

// The monitor's state, as far as the benches read it to decide it is warmed up.
type MonitorState = { status: string; inference: { decoded_frames: number }; motion: { frames_analysed: number } };

export async function createBenchMonitors(
  d: TestDaemon,
  ids: string[],
  opts: {
    url: (i: number) => string;
    inferenceFps: number;
    extra: object | ((i: number) => object);
    ready: (state: MonitorState) => boolean;
  },
): Promise<void> {
  for (const [i, id] of ids.entries()) {
    const more = typeof opts.extra === 'function' ? opts.extra(i) : opts.extra;
    const r = await call(d, 'POST', '/v1/monitors', {
      id,
      name: id,
      source: { url: opts.url(i) },
      collection_id: 'bench',
      inference_fps: opts.inferenceFps,
      event_buffer_size: 10000,
      event_policy: { confirm_frames: 3, absence_timeout_seconds: 1, cooldown_seconds: 0 },
      ...more,
    });
    if (r.status !== 201) throw new Error(JSON.stringify(r.json));
  }
  await waitFor(
    'monitors running',
    async () => {
      const ss: MonitorState[] = await Promise.all(
        ids.map(async (id) => (await call(d, 'GET', `/v1/monitors/${id}/state`)).json.state),
      );
      return ss.every((s) => s.status === 'running' && opts.ready(s)) ? true : undefined;
    },
    60_000,
    500,
  );
}

export async function removeBenchMonitors(d: TestDaemon, ids: string[]): Promise<void> {
  for (const id of ids) await call(d, 'DELETE', `/v1/monitors/${id}`);
}
