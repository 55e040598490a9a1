import { restoreSession, session } from '../api.js';
import { h, replace } from '../dom.js';
import { KIOSK_KEY, KIOSK_READY } from '../kioskHandoff.js';
import { LivePreview } from '../preview.js';
import { authRequired, signInForm } from '../signin.js';

/**
 * /kiosk/<monitor_id>: the full-screen preview with overlays and the recognised names, no controls.
 * The key comes from the tab that opened this window (postMessage, same origin) or is typed once here;
 * it stays in memory, so daemon and camera restarts are ridden out by the preview's own reconnects.
 */
export function startKiosk(root: HTMLElement): void {
  const monitorId = decodeURIComponent(location.pathname.slice('/kiosk/'.length).replace(/\/$/, ''));
  document.title = `Kiosk · ${monitorId}`;
  document.body.classList.add('kiosk');

  let started = false;
  let current: LivePreview | null = null;
  const run = () => {
    started = true;
    const status = h('div', { class: 'kiosk-status', role: 'status', 'data-testid': 'preview-status' });
    const names = h('ul', { class: 'kiosk-names', 'aria-label': 'Recognised now', 'aria-live': 'polite' });
    let last = '';
    const preview = new LivePreview(monitorId, {
      onStatus: (text, level) => {
        // Only trouble is shown: a healthy kiosk is just the picture.
        status.textContent = level === 'ok' ? '' : text;
        status.className = `kiosk-status ${level}`;
      },
      onRecognised: (faces) => {
        const key = faces.map((f) => `${f.kind}:${f.name}`).join('|');
        if (key === last) return;
        last = key;
        names.replaceChildren(...faces.map((f) => h('li', { class: f.kind }, f.name)));
      },
    });
    replace(
      root,
      h('main', { class: 'kiosk-main', 'aria-label': `Live view of ${monitorId}` }, preview.element, names, status),
    );
    current = preview.start();
    window.addEventListener('pagehide', () => preview.stop(), { once: true });
  };

  const fromOpener = (e: MessageEvent) => {
    const data = e.data as { type?: string; key?: unknown };
    if (e.origin !== location.origin || e.source !== window.opener || data?.type !== KIOSK_KEY || started) return;
    window.removeEventListener('message', fromOpener);
    if (typeof data.key === 'string') session.set(data.key);
    run();
  };
  // Typed here, the key is checked and the view starts; a rejected key later brings the form back.
  const ask = () =>
    replace(
      root,
      signInForm(run, `Kiosk for monitor ${monitorId}: paste the API key once. It stays in this window’s memory only.`),
    );
  session.onUnauthorized(() => {
    current?.stop();
    current = null;
    started = false;
    session.set(null);
    ask();
  });
  // A kiosk URL made with a preview-only token (/kiosk/<id>#token=vk_…): the fragment never reaches the
  // server or its logs, and the URL works again after a reboot of the display or the daemon.
  const fromUrl = /(?:^#|&)token=(vk_[A-Za-z0-9_-]+)/.exec(location.hash)?.[1];
  if (fromUrl) {
    session.set(fromUrl);
    session.onUnauthorized(() => {
      current?.stop();
      current = null;
      started = false;
      replace(
        root,
        h(
          'main',
          { class: 'kiosk-main' },
          h(
            'p',
            { class: 'kiosk-status error', role: 'alert' },
            `This kiosk link is not valid for monitor ${monitorId} (revoked?). Make a new one on the monitor's page or with vigil kiosk create.`,
          ),
        ),
      );
    });
    run();
    return;
  }
  void authRequired().then(async (required) => {
    // Signed in with a password in this browser: the session cookie opens the preview, nothing to ask.
    if (!required || (await restoreSession())) return run();
    if (!window.opener) return ask();
    window.addEventListener('message', fromOpener);
    (window.opener as Window).postMessage({ type: KIOSK_READY }, location.origin);
    // If the opener does not answer (closed, or another page), ask.
    window.setTimeout(() => {
      if (!started) ask();
    }, 2000);
  });
}
