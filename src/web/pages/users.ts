import type { AuditPageResponse, SessionListResponse, UserListResponse, UserT } from '../../contract/users.js';
import { api, enc, session, type Wire } from '../api.js';
import { field, fmt, h, replace } from '../dom.js';
import type { PageContext } from '../router.js';
import { Pager, busy, errorBox, messageArea, notice } from '../ui.js';

const ROLES = ['viewer', 'operator', 'admin'] as const;
const ROLE_HELP = 'viewer: watches cameras and events; operator: also enrols and manages cameras; admin: everything.';

const table = (label: string, head: string[], rows: HTMLElement[]) =>
  h(
    'table',
    { 'aria-label': label },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        head.map((t) => h('th', { scope: 'col' }, t)),
      ),
    ),
    h('tbody', null, rows),
  );

/** The accounts: role changes, password resets, removal, and a form for a new one. */
async function usersSection(signal: AbortSignal): Promise<HTMLElement> {
  const messages = messageArea();
  const list = h('div');
  const load = async () => {
    const r = await api<Wire<typeof UserListResponse>>('GET', '/v1/users', undefined, signal);
    const row = (u: UserT) => {
      const role = h(
        'select',
        { 'aria-label': `Role of ${u.username}` },
        ROLES.map((x) => h('option', { value: x, selected: x === u.role }, x)),
      );
      role.addEventListener(
        'change',
        () =>
          void busy(null, messages, async () => {
            await api('PATCH', `/v1/users/${enc(u.id)}`, { role: role.value });
            messages.show(notice(`${u.username} is now ${role.value}.`));
          }),
      );
      const reset = h('button', { type: 'button', class: 'small' }, 'New password…');
      reset.addEventListener('click', () => {
        const password = prompt(`New password for ${u.username} (at least 10 characters):`);
        if (!password) return;
        void busy(reset, messages, async () => {
          await api('PATCH', `/v1/users/${enc(u.id)}`, { password });
          messages.show(notice(`${u.username}'s password changed; their sessions ended.`));
        });
      });
      const del = h('button', { type: 'button', class: 'small danger' }, 'Delete');
      del.addEventListener('click', () => {
        if (!confirm(`Delete the account ${u.username}?`)) return;
        void busy(del, messages, async () => {
          await api('DELETE', `/v1/users/${enc(u.id)}`);
          await load();
        });
      });
      return h(
        'tr',
        { 'data-username': u.username },
        h('td', null, u.username, u.username === session.username ? h('small', { class: 'muted' }, ' (you)') : null),
        h('td', null, role),
        h('td', null, fmt.time(u.last_sign_in_at)),
        h('td', null, h('div', { class: 'actions' }, reset, del)),
      );
    };
    replace(list, table('Users', ['User', 'Role', 'Last sign-in', ''], r.users.map(row)));
  };
  await load().catch((e: unknown) => messages.show(errorBox(e)));

  const username = h('input', { type: 'text', required: true, autocomplete: 'off', maxlength: '64' });
  const password = h('input', { type: 'password', required: true, autocomplete: 'new-password', minlength: '10' });
  const role = h(
    'select',
    null,
    ROLES.map((x) => h('option', { value: x, selected: x === 'operator' }, x)),
  );
  const add = h('button', { type: 'submit' }, 'Add user');
  const form = h(
    'form',
    { class: 'inline-form', 'aria-label': 'Add a user' },
    field('Username', username),
    field('Password', password, 'At least 10 characters.'),
    field('Role', role, ROLE_HELP),
    add,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(add, messages, async () => {
      await api('POST', '/v1/users', { username: username.value.trim(), password: password.value, role: role.value });
      messages.show(notice(`${username.value.trim()} can sign in now.`));
      form.reset();
      await load();
    });
  });
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'users-h' },
    h('h2', { id: 'users-h' }, 'Users'),
    list,
    h('h3', null, 'Add a user'),
    form,
    messages,
  );
}

/** Signed-in browsers: who, from where, when last used; any of them can be ended. */
async function sessionsSection(signal: AbortSignal): Promise<HTMLElement> {
  const messages = messageArea();
  const list = h('div', { 'data-testid': 'sessions' });
  const load = async () => {
    const r = await api<Wire<typeof SessionListResponse>>('GET', '/v1/auth/sessions', undefined, signal);
    replace(
      list,
      r.sessions.length
        ? table(
            'Sessions',
            ['User', 'From', 'Last used', ''],
            r.sessions.map((s) => {
              const revoke = h('button', { type: 'button', class: 'small danger' }, s.current ? 'Sign out' : 'Revoke');
              revoke.addEventListener(
                'click',
                () =>
                  void busy(revoke, messages, async () => {
                    await api('DELETE', `/v1/auth/sessions/${enc(s.id)}`);
                    await load();
                  }),
              );
              return h(
                'tr',
                { 'data-session-user': s.username },
                h(
                  'td',
                  null,
                  `${s.username} (${s.role})`,
                  s.current ? h('small', { class: 'muted' }, ' this one') : null,
                ),
                h('td', null, s.address, h('br'), h('small', { class: 'muted' }, s.user_agent.slice(0, 60))),
                h('td', null, fmt.time(s.last_seen_at)),
                h('td', null, revoke),
              );
            }),
          )
        : h('p', { class: 'muted' }, 'Nobody is signed in with a password.'),
    );
  };
  await load().catch((e: unknown) => messages.show(errorBox(e)));
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'sess-h' },
    h('h2', { id: 'sess-h' }, 'Sessions'),
    list,
    messages,
  );
}

/** Who enrolled, deleted, exported or changed settings, and when (API, UI and CLI). */
async function auditSection(signal: AbortSignal): Promise<HTMLElement> {
  const messages = messageArea();
  const list = h('div', { 'data-testid': 'audit' });
  const pager = new Pager();
  const actor = h('input', { type: 'search', placeholder: 'username or api key #…', autocomplete: 'off' });
  const action = h('input', { type: 'search', placeholder: 'e.g. patch_settings', autocomplete: 'off' });
  const load = async () => {
    const q = new URLSearchParams({ limit: '25' });
    if (pager.cursor) q.set('cursor', pager.cursor);
    if (actor.value.trim()) q.set('actor', actor.value.trim());
    if (action.value.trim()) q.set('action', action.value.trim());
    try {
      const r = await api<Wire<typeof AuditPageResponse>>('GET', `/v1/audit?${q}`, undefined, signal);
      pager.next = r.next_cursor;
      replace(
        list,
        r.entries.length
          ? table(
              'Audit log',
              ['When', 'Who', 'What', 'Result'],
              r.entries.map((e) =>
                h(
                  'tr',
                  null,
                  h('td', null, fmt.time(e.at)),
                  h('td', null, e.actor, h('br'), h('small', { class: 'muted' }, `${e.source} ${e.address ?? ''}`)),
                  h('td', null, h('code', null, e.action), h('br'), h('small', { class: 'muted' }, e.path ?? '')),
                  h('td', null, e.status === null ? '—' : String(e.status), e.error_code ? ` ${e.error_code}` : ''),
                ),
              ),
            )
          : h('p', { class: 'muted' }, 'Nothing recorded.'),
        pager.controls(() => void load()),
      );
    } catch (e) {
      messages.show(errorBox(e));
    }
  };
  const filters = h(
    'form',
    { class: 'filters', 'aria-label': 'Filter the audit log' },
    field('Who', actor),
    field('Action', action),
    h('button', { type: 'submit' }, 'Apply'),
  );
  filters.addEventListener('submit', (e) => {
    e.preventDefault();
    pager.reset();
    void load();
  });
  await load();
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'audit-h' },
    h('h2', { id: 'audit-h' }, 'Audit log'),
    filters,
    list,
    messages,
  );
}

/** Users, their sessions and the audit log (admins). */
export async function usersPage(ctx: PageContext): Promise<HTMLElement> {
  const [users, sessions, audit] = await Promise.all([
    usersSection(ctx.signal),
    sessionsSection(ctx.signal),
    auditSection(ctx.signal),
  ]);
  return h('div', null, h('h1', null, 'Users and access'), users, sessions, audit);
}
