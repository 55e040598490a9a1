import { checkKey, session } from './api.js';
import { field, h } from './dom.js';
import { errorBox, messageArea } from './ui.js';

/**
 * Asks for the API key. The form is never submitted (no action, submit is handled here), so the key
 * cannot end up in a URL; autocomplete is off so the browser does not offer to store it.
 */
export function signInForm(onDone: () => void, intro?: string): HTMLElement {
  const input = h('input', {
    type: 'password',
    autocomplete: 'off',
    autocapitalize: 'off',
    spellcheck: 'false',
    required: true,
    minlength: '16',
    class: 'wide',
  });
  const messages = messageArea();
  const button = h('button', { type: 'submit' }, 'Sign in');
  const form = h(
    'form',
    { class: 'card signin', autocomplete: 'off', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Vigil'),
    h(
      'p',
      { class: 'muted' },
      intro ?? 'Paste the API key. It is kept in this tab’s memory only: closing or reloading the tab forgets it.',
    ),
    field('API key', input),
    button,
    messages,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const key = input.value.trim();
    button.disabled = true;
    checkKey(key)
      .then(() => {
        session.set(key);
        input.value = '';
        onDone();
      })
      .catch((err: unknown) => messages.show(errorBox(err)))
      .finally(() => {
        button.disabled = false;
      });
  });
  requestAnimationFrame(() => input.focus());
  return form;
}

/** Whether the daemon wants a key at all ([auth] enabled = false needs none). */
export async function authRequired(): Promise<boolean> {
  try {
    const res = await fetch('/v1/health', { cache: 'no-store', credentials: 'omit' });
    const body = (await res.json()) as { auth_enabled?: boolean };
    return body.auth_enabled !== false;
  } catch {
    return true;
  }
}
