import { ApiFailure } from './api.js';
import { h, type Child } from './dom.js';

/** An error as people need it: the message, the code (for support), and the request id. */
export function errorBox(e: unknown): HTMLElement {
  if (e instanceof ApiFailure) {
    return h(
      'div',
      { class: 'alert error', role: 'alert' },
      h('strong', null, e.message),
      ' ',
      h('code', { class: 'code' }, e.code),
      e.requestId ? h('small', { class: 'muted' }, ` request ${e.requestId}`) : null,
    );
  }
  return h('div', { class: 'alert error', role: 'alert' }, String((e as Error)?.message ?? e));
}

export function notice(text: Child, level: 'ok' | 'warn' | 'error' = 'ok'): HTMLElement {
  return h('div', { class: `alert ${level}`, role: level === 'error' ? 'alert' : 'status' }, text);
}

/** A region whose content is replaced by results and errors of actions. */
export function messageArea(): HTMLElement & { show(c: Child): void; clear(): void } {
  const el = Object.assign(h('div', { class: 'messages', 'aria-live': 'polite' }), {
    show(_c: Child): void {},
    clear(): void {},
  });
  el.show = (c) => {
    el.replaceChildren();
    if (c instanceof Node) el.append(c);
    else if (c !== null && c !== undefined && c !== false) el.append(String(c));
  };
  el.clear = () => el.replaceChildren();
  return el;
}

/** Runs an async action from a button/form, disabling it while it runs and showing failures. */
export async function busy<T>(
  button: HTMLButtonElement | null,
  messages: ReturnType<typeof messageArea>,
  action: () => Promise<T>,
): Promise<T | undefined> {
  if (button) button.disabled = true;
  try {
    return await action();
  } catch (e) {
    messages.show(errorBox(e));
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

/** Keyset pages: the API gives next_cursor; "Previous" walks back through the cursors already seen. */
export class Pager {
  private stack: (string | null)[] = [null];
  next: string | null = null;
  get cursor(): string | null {
    return this.stack[this.stack.length - 1]!;
  }
  get hasPrevious(): boolean {
    return this.stack.length > 1;
  }
  forward(): void {
    if (this.next) this.stack.push(this.next);
  }
  back(): void {
    if (this.stack.length > 1) this.stack.pop();
  }
  reset(): void {
    this.stack = [null];
  }
  controls(reload: () => void): HTMLElement {
    return h(
      'nav',
      { class: 'pager', 'aria-label': 'Pages' },
      h(
        'button',
        {
          type: 'button',
          disabled: !this.hasPrevious,
          onclick: () => {
            this.back();
            reload();
          },
        },
        '← Previous',
      ),
      h('span', { class: 'muted' }, `Page ${this.stack.length}`),
      h(
        'button',
        {
          type: 'button',
          disabled: !this.next,
          onclick: () => {
            this.forward();
            reload();
          },
        },
        'Next →',
      ),
    );
  }
}

/** Repeats fn every ms until the page's signal aborts. */
export function every(ms: number, signal: AbortSignal, fn: () => unknown): void {
  const t = window.setInterval(() => void fn(), ms);
  signal.addEventListener('abort', () => clearInterval(t), { once: true });
}

export function link(href: string, text: Child, attrs: Record<string, unknown> = {}): HTMLAnchorElement {
  return h('a', { href, ...attrs }, text);
}
