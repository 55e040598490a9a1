import { call, face, form, post, type TestDaemon } from './daemon.js';
import type { Segment } from './rtsp.js';

/** The [monitors] settings the stream tests use: fast timeouts so reconnects take seconds, not minutes. */
export const FAST_MONITORS_TOML = [
  '[monitors]',
  'open_timeout_seconds = 3',
  'read_timeout_seconds = 1.5',
  'reconnect_delay_seconds = 0.3',
  'latency_ms = 0',
].join('\n');

/** A collection with Obama (2 photos) and Biden (1 photo) enrolled; the stream uses their other photos. */
export async function enrollObamaBiden(d: TestDaemon, id: string): Promise<void> {
  const c = await call(d, 'POST', '/v1/collections', { id, name: id });
  if (c.status !== 201) throw new Error(`collection: ${JSON.stringify(c.json)}`);
  for (const [pid, files] of [
    ['obama', ['identities/obama/2.jpg', 'identities/obama/3.jpg']],
    ['biden', ['identities/biden/2.jpg']],
  ] as const) {
    const r = await post(d, `/v1/collections/${id}/persons`, form({ id: pid, name: pid, images: files.map(face) }));
    if (r.res.status !== 201) throw new Error(`${pid}: ${JSON.stringify(r.json)}`);
  }
}

/** A known face (Obama, as enrollObamaBiden enrols him), nobody, an unknown face (Rose Leslie), nobody. */
export function knownThenUnknown(seconds: number): Segment[] {
  return [
    { image: face('identities/obama/1.jpg'), seconds },
    { image: null, seconds: 1 },
    { image: face('identities/rose_leslie/1.jpg'), seconds },
    { image: null, seconds: 1 },
  ];
}

/** A monitor with its preview on, at 1 inference fps, on `url` for `collection` (throws unless 201). */
export async function addPreviewMonitor(d: TestDaemon, id: string, url: string, collection = 'gallery'): Promise<void> {
  const r = await call(d, 'POST', '/v1/monitors', {
    id,
    name: id,
    source: { url },
    collection_id: collection,
    inference_fps: 1,
    preview_enabled: true,
  });
  if (r.status !== 201) throw new Error(JSON.stringify(r.json));
}

/** Polls until `check` returns a value (not undefined) or the time runs out (then throws with the last seen value). */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  everyMs = 200,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export type MonitorEvent = {
  type: string;
  sequence: number;
  person?: { id: string } | null;
  error?: { code: string; cause?: string } | null;
  [k: string]: unknown;
};

/** Reads a monitor's events from the start of the current epoch, following next_cursor. */
export async function allEvents(d: TestDaemon, id: string): Promise<MonitorEvent[]> {
  const out: MonitorEvent[] = [];
  let cursor: string | null = null;
  for (;;) {
    const q: string = cursor ? `?limit=1000&cursor=${encodeURIComponent(cursor)}` : '?limit=1000';
    const r = await call(d, 'GET', `/v1/monitors/${id}/events${q}`);
    if (r.status !== 200) throw new Error(JSON.stringify(r.json));
    out.push(...(r.json.events as MonitorEvent[]));
    if (!r.json.has_more) return out;
    cursor = r.json.next_cursor;
  }
}

/** An open MJPEG preview: bytes received so far, frames (boundaries) seen, and a promise settled when it ends. */
export function watchPreview(url: string, headers: Record<string, string>) {
  const controller = new AbortController();
  const s = { bytes: 0, frames: 0, ended: null as Promise<'ended'> | null, stop: () => controller.abort() };
  s.ended = fetch(url, { headers, signal: controller.signal }).then(async (res) => {
    if (res.status !== 200) throw new Error(`preview answered ${res.status}`);
    const reader = res.body!.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return 'ended' as const;
      s.bytes += value.length;
      s.frames += Buffer.from(value).toString('latin1').split('--frame\r\n').length - 1;
    }
  });
  s.ended.catch(() => undefined);
  return s;
}

/** The stream's end, or 'still open' after `ms` (a revoked stream must end well before). */
export const endedWithin = (s: ReturnType<typeof watchPreview>, ms: number) =>
  Promise.race([s.ended!, new Promise<'still open'>((r) => setTimeout(() => r('still open'), ms))]);
