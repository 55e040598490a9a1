import { checkKey, session, signInWithPassword } from './api.js';
import { field, h } from './dom.js';
import { errorBox, messageArea } from './ui.js';

/** Whether the daemon wants a credential at all ([auth] enabled = false needs none) and has a user yet. */
export async function authStatus(): Promise<{ required: boolean; setupRequired: boolean }> {
  try {
    const res = await fetch('/v1/auth/setup', { cache: 'no-store', credentials: 'omit' });
    const body = (await res.json()) as { auth_enabled?: boolean; setup_required?: boolean };
    return { required: body.auth_enabled !== false, setupRequired: body.setup_required === true };
  } catch {
    return { required: true, setupRequired: false };
  }
}

/** Whether the daemon wants a key at all ([auth] enabled = false needs none). */
export async function authRequired(): Promise<boolean> {
  return (await authStatus()).required;
}

const input = (attrs: Record<string, unknown>) =>
  h('input', { autocapitalize: 'off', spellcheck: 'false', required: true, class: 'wide', ...attrs });

/** Runs a form's action with its button disabled; a failure is the form's message, not a sign-out. */
function onSubmit(form: HTMLFormElement, messages: ReturnType<typeof messageArea>, action: () => Promise<void>) {
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const button = form.querySelector('button[type=submit]') as HTMLButtonElement;
    button.disabled = true;
    messages.clear();
    action()
      .catch((err: unknown) => messages.show(errorBox(err)))
      .finally(() => {
        button.disabled = false;
      });
  });
}

/**
 * The API key, as an advanced alternative. The form is never submitted (no action, submit is handled here),
 * so the key cannot end up in a URL; autocomplete is off so the browser does not offer to store it.
 */
function keyForm(onDone: () => void): HTMLFormElement {
  const key = input({ type: 'password', autocomplete: 'off', minlength: '16' });
  const messages = messageArea();
  const form = h(
    'form',
    { class: 'signin-key', autocomplete: 'off' },
    h(
      'p',
      { class: 'muted' },
      'The API key is kept in this tab’s memory only: closing or reloading the tab forgets it.',
    ),
    field('API key', key),
    h('button', { type: 'submit', class: 'secondary' }, 'Use the key'),
    messages,
  );
  onSubmit(form, messages, async () => {
    const value = key.value.trim();
    await checkKey(value);
    session.set(value);
    key.value = '';
    onDone();
  });
  return form;
}

/**
 * The sign-in page: username and password (the browser's password manager may fill them: the fields say what
 * they are), or, while no user exists, the first admin with the set-up code the daemon printed at start. The
 * API key stays available behind a disclosure. `intro` says why the page is shown (signed out, session ended).
 */
export function signInForm(onDone: () => void, intro?: string, setupRequired = false): HTMLElement {
  const messages = messageArea();
  const username = input({ type: 'text', name: 'username', autocomplete: 'username', maxlength: '64' });
  const password = input({
    type: 'password',
    name: 'password',
    autocomplete: setupRequired ? 'new-password' : 'current-password',
    maxlength: '256',
  });
  const code = setupRequired ? input({ type: 'text', name: 'setup_code', autocomplete: 'off', maxlength: '64' }) : null;
  const again = setupRequired
    ? input({ type: 'password', name: 'password_again', autocomplete: 'new-password', maxlength: '256' })
    : null;
  if (setupRequired) password.setAttribute('minlength', '10');
  const form = h(
    'form',
    { class: 'signin-password', 'aria-labelledby': 'signin-heading' },
    h('h2', { id: 'signin-heading' }, setupRequired ? 'Create the first admin' : 'Sign in'),
    setupRequired
      ? h(
          'p',
          { class: 'muted' },
          'No user exists yet. Enter the set-up code the daemon printed at its start (journalctl -u vigil | grep set-up) and choose the admin’s name and password (at least 10 characters).',
        )
      : null,
    code ? field('Set-up code', code) : null,
    field('Username', username),
    field('Password', password),
    again ? field('Password again', again) : null,
    h('button', { type: 'submit' }, setupRequired ? 'Create and sign in' : 'Sign in'),
    messages,
  );
  onSubmit(form, messages, async () => {
    if (again && again.value !== password.value) throw new Error('The two passwords differ.');
    const credentials = { username: username.value.trim(), password: password.value };
    await signInWithPassword(code ? { setup_code: code.value.trim(), ...credentials } : credentials);
    password.value = '';
    if (again) again.value = '';
    onDone();
  });
  const card = h(
    'section',
    { class: 'card signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Vigil'),
    intro ? h('p', { class: 'muted', role: 'status' }, intro) : null,
    form,
    h('details', { class: 'signin-alt' }, h('summary', null, 'Use the API key instead'), keyForm(onDone)),
  );
  requestAnimationFrame(() => (code ?? username).focus());
  return card;
}
