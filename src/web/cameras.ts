import type { HistoryEvent } from '../contract/events.js';
import type { MonitorT } from '../contract/monitors.js';
import { api, enc, imageUrl, type Wire } from './api.js';
import { h } from './dom.js';

/** How a camera is doing, as the tiles, lists and camera pages show it. */
export function statusBadge(status: string, connected: boolean): HTMLElement {
  const level =
    status === 'running' && connected ? 'ok' : status === 'stopped' ? 'muted' : status === 'error' ? 'error' : 'warn';
  return h('span', { class: `badge ${level}`, 'data-testid': 'camera-status' }, status);
}

/** "rtsp_source_unavailable (connection_refused): The RTSP source is unavailable: ..." */
export function lastErrorText(e: Record<string, unknown> | string): string {
  if (typeof e === 'string') return e;
  const cause = typeof e.cause === 'string' ? ` (${e.cause})` : '';
  return typeof e.code === 'string' && typeof e.message === 'string'
    ? `${e.code}${cause}: ${e.message}`
    : JSON.stringify(e);
}

/** Why a camera shows no picture, in a line for a person: null while it streams. */
export function downCause(m: Pick<MonitorT, 'enabled' | 'preview_enabled' | 'runtime'>): string | null {
  if (!m.enabled) return 'Disabled';
  const e = m.runtime.last_error as Record<string, unknown> | string | null;
  const cause = e && typeof e === 'object' && typeof e.cause === 'string' ? e.cause.replaceAll('_', ' ') : null;
  if (m.runtime.status === 'running' && m.runtime.connected) return m.preview_enabled ? null : 'Live preview off';
  if (m.runtime.status === 'starting') return 'Connecting…';
  if (cause) return `Camera unreachable: ${cause}`;
  return e ? lastErrorText(e) : m.runtime.status;
}

export type CameraEvent = Wire<typeof HistoryEvent>;

/** The newest arrival (a person or an unknown face) on a camera, or null. */
export async function lastArrival(monitorId: string, signal: AbortSignal): Promise<CameraEvent | null> {
  const q = new URLSearchParams({ monitor_id: monitorId, type: 'person_enter,unknown_enter', limit: '1' });
  const r = await api<{ events: CameraEvent[] }>('GET', `/v1/events?${q}`, undefined, signal);
  return r.events[0] ?? null;
}

/** "Barack Obama" or "Unknown face". */
export function whoOf(e: CameraEvent): string {
  return e.person ? (e.person.name ?? e.person.id) : 'Unknown face';
}

/**
 * A face crop shown from an object URL (the image needs the credential), replaced when `set` gets another
 * event and revoked when the page goes.
 */
export function faceThumb(signal: AbortSignal, className = 'face-thumb') {
  const img = h('img', { class: className, alt: '', width: 48, height: 48, hidden: true });
  let url: string | null = null;
  let shownFor: string | null = null;
  const drop = () => {
    if (url) URL.revokeObjectURL(url);
    url = null;
  };
  signal.addEventListener('abort', drop, { once: true });
  return {
    img,
    set(e: CameraEvent | null): void {
      const crop = e?.snapshot.status === 'ready' ? e.snapshot.crop_url : null;
      if (!e || !crop) {
        img.hidden = true;
        shownFor = null;
        return;
      }
      if (shownFor === e.id) return;
      shownFor = e.id;
      img.alt = `Face of ${whoOf(e)}`;
      imageUrl(crop, signal).then(
        (u) => {
          if (signal.aborted || shownFor !== e.id) return URL.revokeObjectURL(u);
          drop();
          url = u;
          img.src = u;
          img.hidden = false;
        },
        () => {
          img.hidden = true;
        },
      );
    },
  };
}

export const cameraPath = (id: string): string => `/monitors/${enc(id)}`;
