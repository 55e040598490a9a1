import type {
  MonitorPipelinesResponse,
  SettingEntry,
  SettingsPatchResponse,
  SettingsResponse,
} from '../../contract/settings.js';
import { ApiFailure, api, type Wire } from '../api.js';
import { h, replace, type Child } from '../dom.js';
import type { PageContext } from '../router.js';
import { busy, errorBox, messageArea, notice } from '../ui.js';
import { outputsSection } from './outputs.js';

type Entry = Wire<typeof SettingEntry>;
type Schema = {
  type?: string;
  enum?: unknown[];
  anyOf?: Schema[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  pattern?: string;
};

/** The sections people change, in this order; each takes the keys that start with one of its prefixes. */
const SECTIONS: { id: string; title: string; intro: string; prefixes: string[]; basic: string[] }[] = [
  {
    id: 'mqtt',
    title: 'MQTT and Home Assistant',
    intro: 'Events go to an MQTT broker; Home Assistant finds the cameras through discovery.',
    prefixes: ['mqtt.'],
    basic: ['mqtt.enabled', 'mqtt.url', 'mqtt.username', 'mqtt.password', 'mqtt.topic_prefix', 'mqtt.discovery'],
  },
  {
    id: 'events',
    title: 'Event history and retention',
    intro: 'How long events and their pictures are kept, and what is saved with them.',
    prefixes: ['events.'],
    basic: ['events.max_age_days', 'events.max_events', 'events.max_snapshot_bytes', 'events.snapshots'],
  },
  {
    id: 'detection',
    title: 'Detection and enrolment',
    intro: 'Face detection thresholds and the review that enrolment photos must pass.',
    prefixes: ['detection.', 'inference.default_threshold', 'registration.'],
    basic: [
      'inference.default_threshold',
      'detection.threshold',
      'registration.min_quality',
      'registration.min_face_size',
    ],
  },
  {
    id: 'cameras',
    title: 'Cameras',
    intro: 'Limits, preview, timeouts and the motion gate of every camera (each camera may override the motion gate).',
    prefixes: ['monitors.'],
    basic: ['monitors.pipeline', 'monitors.max_streams', 'monitors.preview_fps', 'monitors.motion.gate'],
  },
  {
    id: 'collections',
    title: 'New collections',
    intro: 'Defaults for collections created through the API (the web UI always keeps face crops).',
    prefixes: ['collections.'],
    basic: ['collections.save_face_crops', 'collections.default_search_profile'],
  },
  {
    id: 'webhooks',
    title: 'Webhook delivery',
    intro: 'Timeouts and retries of every webhook endpoint (the endpoints themselves are above).',
    prefixes: ['webhooks.'],
    basic: ['webhooks.timeout_seconds', 'webhooks.disable_after_failures'],
  },
];
/** Chosen from the list of decode pipelines, not typed. */
const PIPELINE_KEY = 'monitors.pipeline';

const inSection = (key: string, prefixes: string[]) =>
  prefixes.some((p) => (p.endsWith('.') ? key.startsWith(p) : key === p));

/** "monitors.motion.keepalive_seconds" under "monitors." -> "motion keepalive seconds" */
function label(key: string, prefixes: string[]): string {
  const prefix = prefixes.find((p) => p.endsWith('.') && key.startsWith(p)) ?? '';
  return key.slice(prefix.length).replaceAll('.', ' ').replaceAll('_', ' ');
}

const show = (v: unknown): string =>
  v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);

/** A form control for one key from its JSON Schema, and how to read the value back (undefined: unchanged). */
function control(e: Entry, id: string): { el: HTMLElement; read(): unknown } {
  const s = e.schema as Schema;
  const disabled = !e.editable || e.source === 'env';
  const consts = s.anyOf?.every((a) => 'const' in a) ? s.anyOf.map((a) => a.const) : null;
  const choices = s.enum ?? consts;
  if (s.type === 'boolean') {
    const el = h('input', { type: 'checkbox', id, checked: e.value === true, disabled });
    return { el, read: () => (el.checked === (e.value === true) ? undefined : el.checked) };
  }
  if (choices) {
    const el = h(
      'select',
      { id, disabled },
      choices.map((c) => h('option', { value: JSON.stringify(c), selected: c === e.value }, show(c))),
    );
    return {
      el,
      read: () => {
        const v = JSON.parse(el.value) as unknown;
        return v === e.value ? undefined : v;
      },
    };
  }
  if (s.type === 'number' || s.type === 'integer') {
    const el = h('input', {
      type: 'number',
      id,
      disabled,
      min: s.minimum,
      max: s.maximum,
      step: s.type === 'integer' ? '1' : 'any',
      value: show(e.value),
      placeholder: e.default === null ? 'not set' : `default ${show(e.default)}`,
    });
    return {
      el,
      read: () => {
        if (el.value === show(e.value)) return undefined;
        return el.value === '' ? null : Number(el.value);
      },
    };
  }
  // Strings, "auto"-or-number, lists: text; JSON where it is not a plain string.
  const plain = s.type === 'string';
  const el = h('input', {
    type: 'text',
    id,
    disabled,
    value: show(e.value),
    spellcheck: 'false',
    autocomplete: 'off',
    placeholder: e.default === null ? 'not set' : `default ${show(e.default)}`,
  });
  return {
    el,
    read: () => {
      if (el.value === show(e.value)) return undefined;
      if (el.value.trim() === '') return null;
      if (plain) return el.value;
      const n = Number(el.value);
      if (el.value.trim() !== '' && Number.isFinite(n)) return n;
      try {
        return JSON.parse(el.value) as unknown;
      } catch {
        return el.value;
      }
    },
  };
}

/** What a key's row says besides its control: where the value comes from, restart, why it is locked. */
function keyNotes(e: Entry): Child[] {
  const notes: Child[] = [];
  if (e.secret)
    notes.push(
      h('span', { class: 'muted' }, `${e.is_set ? 'Set' : 'Not set'}: ${e.reason ?? 'set it in the environment'}.`),
    );
  else if (!e.editable && e.reason) notes.push(h('span', { class: 'muted' }, `Not editable here: ${e.reason}`));
  if (e.source === 'env')
    notes.push(h('span', { class: 'warn' }, `Set by ${e.env ?? 'the environment'}; the file's value is not used.`));
  if (e.restart_pending)
    notes.push(
      h(
        'span',
        { class: 'warn', 'data-testid': 'restart-pending' },
        `Saved as ${show(e.configured_value)}: waits for a restart.`,
      ),
    );
  return notes;
}

/** One section: a form of its keys that sends only what changed, and says per key whether it applies now. */
function sectionForm(
  section: (typeof SECTIONS)[number],
  entries: Entry[],
  writable: boolean,
  pipelines: Wire<typeof MonitorPipelinesResponse> | null,
  /** What the last save of this section said (shown again after the page re-read the settings). */
  outcome: HTMLElement | null,
  saved: (outcome: HTMLElement) => Promise<void>,
): HTMLElement {
  const readers: [string, () => unknown][] = [];
  const rows = entries.map((e) => {
    const id = `set-${e.key.replaceAll('.', '-')}`;
    if (e.key === PIPELINE_KEY && pipelines) {
      const el = h(
        'select',
        { id, disabled: !e.editable || e.source === 'env' },
        pipelines.pipelines.map((p) =>
          h(
            'option',
            { value: p.id, selected: p.current, disabled: !p.available && !p.current },
            `${p.label}${p.available ? '' : ` (not on this box: ${p.problem ?? 'missing elements'})`}`,
          ),
        ),
        pipelines.current === 'custom' ? h('option', { value: '', selected: true }, 'Custom (server.toml)') : null,
      );
      readers.push([e.key, () => (el.value && el.value !== pipelines.current ? el.value : undefined)]);
      return h(
        'div',
        { class: 'field setting', 'data-key': e.key },
        h('label', { for: id }, 'Decoder (hardware pipeline)'),
        el,
        h('small', { class: 'muted' }, 'Every camera decodes with it; changing it restarts the streams.'),
      );
    }
    const c = control(e, id);
    readers.push([e.key, c.read]);
    const name = h('label', { for: id }, label(e.key, section.prefixes));
    const isBox = c.el instanceof HTMLInputElement && c.el.type === 'checkbox';
    return h(
      'div',
      { class: 'field setting', 'data-key': e.key },
      isBox ? h('div', { class: 'check-row' }, c.el, name) : [name, c.el],
      h(
        'small',
        { class: 'muted' },
        e.description,
        e.apply === 'restart' && e.editable ? ' (applies after a restart)' : '',
      ),
      ...keyNotes(e),
    );
  });
  // The keys most people change first; the rest behind a disclosure.
  const basic = rows.filter((_, i) => section.basic.includes(entries[i]!.key));
  const more = rows.filter((_, i) => !section.basic.includes(entries[i]!.key));
  const messages = messageArea();
  const save = h('button', { type: 'submit', disabled: !writable }, 'Save');
  const form = h(
    'form',
    { class: 'card settings', 'aria-labelledby': `sec-${section.id}`, 'data-section': section.id },
    h('h2', { id: `sec-${section.id}` }, section.title),
    h('p', { class: 'muted' }, section.intro),
    ...basic,
    more.length
      ? h(
          'details',
          { class: 'more-settings' },
          h('summary', null, `More ${section.title.toLowerCase()} settings (${more.length})`),
          ...more,
        )
      : null,
    h('div', { class: 'actions' }, save),
    messages,
  );
  if (outcome) messages.show(outcome);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const patch: Record<string, unknown> = {};
    for (const [key, read] of readers) {
      const v = read();
      if (v !== undefined) patch[key] = v;
    }
    if (!Object.keys(patch).length) return messages.show(notice('Nothing changed.', 'warn'));
    void busy(save, messages, async () => {
      try {
        const r = await api<Wire<typeof SettingsPatchResponse>>('PATCH', '/v1/settings', patch);
        const list = h(
          'ul',
          { class: 'plain', 'data-testid': 'settings-outcome' },
          Object.entries(r.results).map(([key, o]) =>
            h(
              'li',
              { class: o.applied ? 'ok' : 'warn' },
              h('code', null, key),
              o.applied ? ': applied now.' : `: saved; applies after a restart${o.reason ? ` (${o.reason})` : ''}.`,
            ),
          ),
        );
        await saved(
          notice(
            h(
              'div',
              null,
              r.restart_required ? 'Saved. Restart the service to apply what waits for it.' : 'Saved and applied.',
              list,
            ),
            r.restart_required ? 'warn' : 'ok',
          ),
        );
      } catch (e) {
        // settings_invalid names the key: mark its row.
        if (e instanceof ApiFailure && typeof e.details.key === 'string')
          form.querySelector(`[data-key="${CSS.escape(e.details.key)}"]`)?.classList.add('invalid');
        throw e;
      }
    });
  });
  return form;
}

/**
 * Settings: MQTT, webhooks, event retention, detection and enrolment, cameras, new collections; each a form
 * of validated keys (PATCH /v1/settings writes server.toml keeping its comments), saying per key whether it
 * applies at once or after a restart. What cannot change here is listed read-only with the reason.
 */
export async function settingsPage(ctx: PageContext): Promise<HTMLElement> {
  const body = h('div');
  const outcomes = new Map<string, HTMLElement>();
  // Built once: it refreshes itself (MQTT state, endpoints) and keeps an open delivery log open.
  const outputs = await outputsSection(ctx).catch((e: unknown) => errorBox(e));
  const load = async (): Promise<void> => {
    const [settings, pipelines] = await Promise.all([
      api<Wire<typeof SettingsResponse>>('GET', '/v1/settings', undefined, ctx.signal),
      api<Wire<typeof MonitorPipelinesResponse>>('GET', '/v1/monitor-pipelines', undefined, ctx.signal).catch(
        () => null,
      ),
    ]);
    const all = settings.settings;
    const pending = all.filter((e) => e.restart_pending);
    const taken = new Set<string>();
    const forms = SECTIONS.map((s) => {
      const entries = all.filter((e) => inSection(e.key, s.prefixes) && !taken.has(e.key));
      for (const e of entries) taken.add(e.key);
      return sectionForm(s, entries, settings.writable, pipelines, outcomes.get(s.id) ?? null, async (box) => {
        outcomes.set(s.id, box);
        await load();
      });
    });
    const rest = all.filter((e) => !taken.has(e.key));
    replace(
      body,
      settings.writable
        ? null
        : notice(
            `Settings cannot be saved: ${settings.problem?.message ?? 'the configuration file is not writable'}.`,
            'error',
          ),
      pending.length
        ? notice(
            h(
              'span',
              { 'data-testid': 'restart-needed' },
              `A restart of the service is needed to apply: ${pending.map((e) => e.key).join(', ')}.`,
            ),
            'warn',
          )
        : null,
      h('p', { class: 'muted' }, `Saved in ${settings.config_file ?? 'no file'} (its comments are kept).`),
      forms[0]!,
      outputs,
      ...forms.slice(1),
      h(
        'details',
        { class: 'card' },
        h('summary', null, `Other settings (${rest.length}, read-only here)`),
        h(
          'dl',
          { class: 'facts' },
          rest.map((e) => [
            h('dt', null, h('code', null, e.key)),
            h('dd', null, e.secret ? (e.is_set ? 'set' : 'not set') : show(e.value) || '—', ' ', ...keyNotes(e)),
          ]),
        ),
      ),
    );
  };
  await load();
  return h('div', null, h('h1', null, 'Settings'), body);
}
