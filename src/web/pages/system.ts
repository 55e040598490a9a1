import type { LivenessManagementResponse, ModelsResponse } from '../../contract/system.js';
import { api, type Wire } from '../api.js';
import { facts, fmt, h, replace } from '../dom.js';
import type { PageContext } from '../router.js';
import { busy, errorBox, every, messageArea, notice } from '../ui.js';
import { outputsSection } from './outputs.js';

/** System → Liveness: the addon's status and the "download and enable after restart" job. */
export async function systemPage(ctx: PageContext): Promise<HTMLElement> {
  const status = h('div', { 'data-testid': 'liveness-status' });
  const messages = messageArea();
  const action = h('button', { type: 'button' }, 'Download and enable after restart');
  let polling = false;

  const render = (l: Wire<typeof LivenessManagementResponse>) => {
    const stateText: Record<string, string> = {
      idle: 'Not downloaded',
      downloading: 'Downloading…',
      ready: 'Downloaded and verified',
      error: 'Failed',
    };
    replace(
      status,
      facts([
        ['Running with liveness', h('strong', { class: l.enabled ? 'ok' : 'muted' }, l.enabled ? 'yes' : 'no')],
        ['Model installed', l.installed ? 'yes (checksum verified)' : 'no'],
        ['Enabled in the config file', l.configured_enabled ? 'yes' : 'no'],
        [
          'Job',
          h(
            'span',
            { 'data-testid': 'liveness-state', class: l.state === 'error' ? 'error' : l.state === 'ready' ? 'ok' : '' },
            stateText[l.state] ?? l.state,
          ),
        ],
        ['Model file', h('code', null, l.model_path)],
        ['Config file', l.config_file ? h('code', null, l.config_file) : '—'],
      ]),
      l.restart_required
        ? notice('Restart the daemon to apply: the configured setting differs from the running one.', 'warn')
        : null,
      l.error
        ? h(
            'div',
            { class: 'alert error', role: 'alert', 'data-testid': 'liveness-error' },
            h('strong', null, 'The last attempt failed: '),
            l.error.message,
            ' ',
            h('code', null, l.error.code),
          )
        : null,
      !l.can_enable && l.unavailable_code
        ? h(
            'div',
            { class: 'alert warn' },
            h('strong', null, 'Cannot be enabled from here: '),
            l.unavailable_reason ?? '',
            ' ',
            h('code', null, l.unavailable_code),
          )
        : null,
    );
    action.disabled = !l.can_enable || l.state === 'downloading' || (l.configured_enabled && l.installed);
    action.textContent = l.error
      ? 'Retry download and enable'
      : l.configured_enabled && l.installed
        ? 'Enabled after restart'
        : 'Download and enable after restart';
    polling = l.state === 'downloading';
  };
  const load = async () => {
    try {
      render(await api<Wire<typeof LivenessManagementResponse>>('GET', '/v1/addons/liveness', undefined, ctx.signal));
    } catch (e) {
      if (!ctx.signal.aborted) messages.show(errorBox(e));
    }
  };
  action.addEventListener(
    'click',
    () =>
      void busy(action, messages, async () => {
        messages.clear();
        render(await api<Wire<typeof LivenessManagementResponse>>('POST', '/v1/addons/liveness/enable', {}));
      }),
  );
  await load();
  every(1000, ctx.signal, () => (polling ? load() : undefined));

  const models = h('div');
  try {
    const m = await api<Wire<typeof ModelsResponse>>('GET', '/v1/models', undefined, ctx.signal);
    models.replaceChildren(
      h(
        'table',
        { 'aria-label': 'Models' },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            ['Model', 'Task', 'Input', 'SHA-256'].map((t) => h('th', { scope: 'col' }, t)),
          ),
        ),
        h(
          'tbody',
          null,
          [...m.models, ...(m.addons ?? [])].map((c) =>
            h(
              'tr',
              null,
              h('td', null, c.model_id),
              h('td', null, c.task),
              h('td', null, c.input_size ? c.input_size.join('×') : '—'),
              h('td', null, h('code', null, String(c.sha256).slice(0, 16))),
            ),
          ),
        ),
      ),
      h('p', null, `Execution provider: ${m.execution_provider}`),
      h('p', { 'data-testid': 'default-threshold' }, thresholdLine(m)),
    );
  } catch (e) {
    models.replaceChildren(errorBox(e));
  }

  return h(
    'div',
    null,
    h('h1', null, 'System'),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'liv' },
      h('h2', { id: 'liv' }, 'Liveness'),
      h(
        'p',
        { class: 'muted' },
        'Liveness rejects photos of photos and screens. Enabling it downloads the model, checks its SHA-256 and turns it on in the config file; it applies after the daemon restarts.',
      ),
      status,
      action,
      messages,
    ),
    h('section', { class: 'card', 'aria-labelledby': 'mod' }, h('h2', { id: 'mod' }, 'Models'), models),
    await outputsSection(ctx),
    h('p', { class: 'muted' }, `Page opened ${fmt.time(new Date().toISOString())}.`),
  );
}

/** Where the default match threshold comes from, in words (the pack's measured value, the config, or upstream). */
function thresholdLine(m: Wire<typeof ModelsResponse>): string {
  const r = m.recommended_threshold;
  const pack = r
    ? `the pack recommends ${r.similarity} (false accept rate ${r.far} per comparison, measured by bench/quality.ts)`
    : 'the pack declares no measured threshold';
  const from =
    m.default_threshold_source === 'config'
      ? 'set in the config'
      : m.default_threshold_source === 'pack'
        ? 'from the pack'
        : 'the upstream default';
  return `Default match threshold ${m.default_threshold} (${from}); ${pack}.`;
}
