import type { RoleT } from '../contract/users.js';
import { restoreSession, session, signOut as endSession } from './api.js';
import { h, replace } from './dom.js';
import { listen, match, route, type Route } from './router.js';
import { authStatus, signInForm } from './signin.js';
import { errorBox } from './ui.js';
import { dashboardPage } from './pages/dashboard.js';
import { livePage } from './pages/live.js';
import { settingsPage } from './pages/settings.js';
import { unknownsPage } from './pages/unknowns.js';
import { usersPage } from './pages/users.js';
import { collectionPage, collectionsPage } from './pages/collections.js';
import { personPage } from './pages/person.js';
import { comparePage, detectPage, searchPage } from './pages/faces.js';
import { monitorPage, monitorsPage } from './pages/monitors.js';
import { systemPage } from './pages/system.js';
import { eventsPage } from './pages/events.js';
import { answerKioskRequests } from './kioskHandoff.js';

const routes: Route[] = [
  route('/', 'Live', livePage),
  route('/dashboard', 'Dashboard', dashboardPage),
  route('/collections', 'Collections', collectionsPage),
  route('/collections/:cid', 'Collection', collectionPage),
  route('/collections/:cid/persons/:pid', 'Person', personPage),
  route('/search', 'Search', searchPage),
  route('/compare', 'Compare', comparePage),
  route('/detect', 'Detect', detectPage),
  route('/monitors', 'Monitors', monitorsPage),
  route('/monitors/:mid', 'Monitor', monitorPage),
  route('/events', 'Events', eventsPage),
  route('/system', 'System', systemPage),
  route('/settings', 'Settings', settingsPage),
  route('/unknowns', 'Unknown visitors', unknownsPage),
  route('/users', 'Users', usersPage),
];

/** Each page with the least role whose calls it makes (a viewer watches cameras and events only). */
const NAV: [string, string, RoleT][] = [
  ['/', 'Live', 'viewer'],
  ['/dashboard', 'Dashboard', 'operator'],
  ['/collections', 'Collections', 'operator'],
  ['/search', 'Search', 'operator'],
  ['/compare', 'Compare', 'operator'],
  ['/detect', 'Detect', 'operator'],
  ['/monitors', 'Monitors', 'viewer'],
  ['/events', 'Events', 'viewer'],
  ['/unknowns', 'Visitors', 'viewer'],
  ['/system', 'System', 'operator'],
  ['/settings', 'Settings', 'admin'],
  ['/users', 'Users', 'admin'],
];

export function startApp(root: HTMLElement): void {
  let page: AbortController | null = null;
  const main = h('main', { id: 'main', tabindex: '-1' });
  const nav = h('nav', { class: 'topnav', id: 'topnav', 'aria-label': 'Main' });
  const signOut = h('button', { type: 'button', class: 'small' }, 'Sign out');
  const who = h('span', { class: 'who muted', 'data-testid': 'signed-in-as' });
  // Phones: the nav folds behind a menu button (CSS shows the button and hides the nav below 760 px).
  const menu = h(
    'button',
    { type: 'button', class: 'menu-toggle small', 'aria-expanded': 'false', 'aria-controls': 'topnav' },
    'Menu',
  );
  const layout = h(
    'div',
    { class: 'layout' },
    h('a', { class: 'skip', href: '#main' }, 'Skip to content'),
    h(
      'header',
      { class: 'top' },
      h('span', { class: 'brand' }, 'Vigil'),
      menu,
      nav,
      h('a', { href: '/docs', class: 'docs-link', target: '_blank', rel: 'noopener' }, 'API docs'),
      who,
      signOut,
    ),
    main,
  );

  const showSignIn = (intro?: string) => {
    page?.abort();
    page = null;
    // While no user exists the page offers the first admin's set-up instead of the sign-in.
    void authStatus().then(({ setupRequired }) =>
      replace(
        root,
        signInForm(() => render(), intro, setupRequired),
      ),
    );
  };
  const header = layout.querySelector('header.top')!;
  const fold = (open: boolean) => {
    header.classList.toggle('open', open);
    menu.setAttribute('aria-expanded', String(open));
  };
  menu.addEventListener('click', () => fold(!header.classList.contains('open')));
  signOut.addEventListener('click', () => {
    void endSession().then(() => showSignIn('Signed out.'));
  });
  session.onUnauthorized(() => {
    const wasUser = session.isUser;
    session.clear();
    showSignIn(
      wasUser
        ? 'Your session has ended (signed out elsewhere, revoked or expired). Sign in again.'
        : 'The daemon rejected the key (it may have been rotated). Paste the API key again.',
    );
  });

  const render = () => {
    if (!session.signedIn && needKey) return showSignIn();
    if (!layout.isConnected) replace(root, layout);
    page?.abort();
    page = new AbortController();
    const signal = page.signal;
    fold(false);
    const found = match(routes, location.pathname);
    who.textContent = session.username ? `${session.username} (${session.role})` : '';
    signOut.hidden = !needKey;
    replace(
      nav,
      NAV.filter(([, , role]) => session.allows(role)).map(([href, text]) => {
        const current = href === '/' ? location.pathname === '/' : location.pathname.startsWith(href);
        return h('a', { href, 'aria-current': current ? 'page' : null }, text);
      }),
    );
    if (!found) {
      replace(
        main,
        h('h1', null, 'Not found'),
        h('p', null, 'No page here. ', h('a', { href: '/' }, 'Go to the cameras.')),
      );
      return;
    }
    document.title = `${found.route.title} · Vigil`;
    replace(main, h('p', { class: 'muted' }, 'Loading…'));
    Promise.resolve(found.route.page({ params: found.params, signal, query: new URLSearchParams(location.search) }))
      .then((content) => {
        if (!signal.aborted) replace(main, content);
      })
      .catch((e: unknown) => {
        if (!signal.aborted) replace(main, h('h1', null, found.route.title), errorBox(e));
      });
  };

  let needKey = true;
  listen(render);
  answerKioskRequests();
  // A session cookie from before the reload signs the tab in again without a form.
  void authStatus().then(async ({ required }) => {
    needKey = required;
    if (required) await restoreSession();
    render();
  });
}
