import type { EventClip, HistoryEventResponse } from '../contract/events.js';
import { ApiFailure, api, enc, imageUrl, session, type Wire } from './api.js';
import { clipText } from './clipText.js';
import { h, replace } from './dom.js';

type Clip = Wire<typeof EventClip>;

/** How often a clip still recording is asked about (its post-roll is seconds). */
const RECORDING_POLL_MS = 2000;

/**
 * An event's clip. Ready: a <video> on the clip's URL, so the browser's own media requests (range requests:
 * it reads the metadata first and seeks without loading the whole file) carry the session cookie. With the
 * API key, which only goes in a header a <video> cannot send, the clip is fetched on request as a blob.
 * Recording: says so and asks again until it is ready. Failed or expired: why there is nothing to play.
 */
export function clipView(eventId: string, clip: Clip, signal: AbortSignal): HTMLElement {
  const box = h('figure', { class: 'event-clip', 'data-testid': 'event-clip' });
  show(box, eventId, clip, signal);
  return box;
}

/** The clip of an event known by id only (the camera page's live list): asked for when wanted. */
export async function clipOfEvent(eventId: string, signal: AbortSignal): Promise<HTMLElement> {
  try {
    const { event } = await api<Wire<typeof HistoryEventResponse>>(
      'GET',
      `/v1/events/${enc(eventId)}`,
      undefined,
      signal,
    );
    if (event.clip) return clipView(eventId, event.clip, signal);
    return h('p', { class: 'muted', 'data-testid': 'event-clip' }, 'This event has no clip.');
  } catch (e) {
    if (e instanceof ApiFailure && e.code === 'event_not_found')
      return h('p', { class: 'muted', 'data-testid': 'event-clip' }, 'Not in the history yet: try again in a moment.');
    throw e;
  }
}

function show(box: HTMLElement, eventId: string, clip: Clip, signal: AbortSignal): void {
  box.dataset.status = clip.status;
  const caption = h('figcaption', { class: 'muted' }, clipText(clip));
  if (clip.status === 'recording') {
    caption.setAttribute('role', 'status');
    replace(box, caption);
    recheck(box, eventId, signal, RECORDING_POLL_MS);
    return;
  }
  if (clip.status !== 'ready' || !clip.url) return replace(box, caption);
  const url = clip.url;
  const video = h('video', {
    class: 'clip-video',
    controls: true,
    preload: 'metadata',
    playsinline: true,
    'aria-label': `Clip of the event, ${caption.textContent}`,
  });
  // A clip that cannot be played: it may have expired since the page loaded, or the codec is not the browser's.
  video.addEventListener(
    'error',
    () => {
      if (!signal.aborted) recheck(box, eventId, signal, 0, 'This browser could not play the clip.');
    },
    { once: true },
  );
  if (session.key() === null) {
    video.src = url;
    replace(
      box,
      video,
      h('figcaption', { class: 'muted' }, caption.textContent, ' · ', h('a', { href: url, download: '' }, 'Download')),
    );
    return;
  }
  const load = h(
    'button',
    {
      type: 'button',
      class: 'small',
      onclick: () => {
        load.disabled = true;
        imageUrl(url, signal).then(
          (blob) => {
            signal.addEventListener('abort', () => URL.revokeObjectURL(blob), { once: true });
            video.src = blob;
            replace(box, video, caption);
          },
          (e: unknown) => {
            load.disabled = false;
            caption.textContent = `${clipText(clip)} · ${e instanceof Error ? e.message : String(e)}`;
          },
        );
      },
    },
    'Load clip',
  );
  replace(box, h('div', { class: 'actions' }, load), caption);
}

/** Asks for the event again after `ms` and shows its clip as it is now; `unchanged` if it is still the same. */
function recheck(box: HTMLElement, eventId: string, signal: AbortSignal, ms: number, unchanged?: string): void {
  const was = box.dataset.status;
  const timer = window.setTimeout(() => {
    // Gone from the page (another page of the list, a new filter): nobody is waiting for it any more.
    if (signal.aborted || (ms > 0 && !box.isConnected)) return;
    api<Wire<typeof HistoryEventResponse>>('GET', `/v1/events/${enc(eventId)}`, undefined, signal).then(
      ({ event }) => {
        const clip = event.clip;
        if (!clip) return replace(box, h('figcaption', { class: 'muted' }, 'The clip is gone.'));
        // Still ready, yet not playable here (an H.265 camera in a browser without HEVC): it can be downloaded.
        if (clip.status === was && unchanged)
          return replace(
            box,
            h(
              'figcaption',
              { class: 'muted' },
              `${clipText(clip)} · ${unchanged}`,
              clip.url && session.key() === null ? [' ', h('a', { href: clip.url, download: '' }, 'Download')] : null,
            ),
          );
        show(box, eventId, clip, signal);
      },
      (e: unknown) => {
        if (signal.aborted) return;
        if (e instanceof ApiFailure && e.status === 404)
          return replace(box, h('figcaption', { class: 'muted' }, 'The event is gone.'));
        recheck(box, eventId, signal, Math.max(ms, RECORDING_POLL_MS), unchanged);
      },
    );
  }, ms);
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
}
