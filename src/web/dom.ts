/** A tiny element builder: the UI is plain DOM, no framework. */
export type Child = Node | string | number | null | undefined | false | Child[];
type Props = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function')
      el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
    else if (k === 'class') el.className = String(v);
    else if (k === 'value' && 'value' in el) (el as HTMLInputElement).value = String(v);
    else if (k === 'checked' && el instanceof HTMLInputElement) el.checked = Boolean(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/** A labelled form control; `id` ties the label to the control for screen readers. */
let fieldSeq = 0;
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  const id = control.id || `f${++fieldSeq}`;
  control.id = id;
  const hintEl = hint ? h('small', { id: `${id}-hint`, class: 'muted' }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hintEl);
}

export const fmt = {
  num: (n: unknown, digits = 3): string =>
    typeof n === 'number' ? (Number.isInteger(n) ? String(n) : n.toFixed(digits)) : '—',
  bytes: (n: unknown): string =>
    typeof n === 'number'
      ? n >= 1 << 30
        ? `${(n / (1 << 30)).toFixed(1)} GiB`
        : `${(n / (1 << 20)).toFixed(0)} MiB`
      : '—',
  time: (s: unknown): string => (typeof s === 'string' ? new Date(s).toLocaleString() : '—'),
};

/** A definition list from label/value pairs. */
export function facts(rows: [string, Child][]): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    rows.map(([k, v]) => [h('dt', null, k), h('dd', null, v)]),
  );
}
