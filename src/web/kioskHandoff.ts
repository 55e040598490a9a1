import { session } from './api.js';

/**
 * The kiosk page gets the key from the tab that opened it: it posts "ready" to its opener, and only a
 * window this tab opened, on this origin, is answered. Nothing goes through storage or the URL.
 */
const opened = new Set<Window>();
export const KIOSK_READY = 'vigil-kiosk-ready';
export const KIOSK_KEY = 'vigil-kiosk-key';

export function openKiosk(monitorId: string): void {
  const w = window.open(`/kiosk/${encodeURIComponent(monitorId)}`, `vigil-kiosk-${monitorId}`);
  if (w) opened.add(w);
}

export function answerKioskRequests(): void {
  window.addEventListener('message', (e: MessageEvent) => {
    if (e.origin !== location.origin || !e.source || !opened.has(e.source as Window)) return;
    if ((e.data as { type?: string })?.type !== KIOSK_READY) return;
    (e.source as Window).postMessage({ type: KIOSK_KEY, key: session.key() }, location.origin);
  });
}
