import { session } from './api.js';
import { h, replace } from './dom.js';
import { listen, match, route, type Route } from './router.js';
import { authRequired, signInForm } from './signin.js';
import { errorBox } from './ui.js';
import { dashboardPage } from './pages/dashboard.js';
import { collectionPage, collectionsPage } from './pages/collections.js';
import { personPage } from './pages/person.js';
import { comparePage, detectPage, searchPage } from './pages/faces.js';
import { monitorPage, monitorsPage } from './pages/monitors.js';
import { systemPage } from './pages/system.js';
import { eventsPage } from './pages/events.js';
import { answerKioskRequests } from './kioskHandoff.js';

const routes: Route[] = [
  route('/', 'Dashboard', dashboardPage),
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
];

const NAV: [string, string][] = [
  ['/', 'Dashboard'],
  ['/collections', 'Collections'],
  ['/search', 'Search'],
  ['/compare', 'Compare'],
  ['/detect', 'Detect'],
  ['/monitors', 'Monitors'],
  ['/events', 'Events'],
  ['/system', 'System'],
];

export function startApp(root: HTMLElement): void {
  let page: AbortController | null = null;
  const main = h('main', { id: 'main', tabindex: '-1' });
  const nav = h('nav', { class: 'topnav', 'aria-label': 'Main' });
  const signOut = h('button', { type: 'button', class: 'small' }, 'Sign out');
  const layout = h(
    'div',
    { class: 'layout' },
    h('a', { class: 'skip', href: '#main' }, 'Skip to content'),
    h(
      'header',
      { class: 'top' },
      h('span', { class: 'brand' }, 'Vigil'),
      nav,
      h('a', { href: '/docs', class: 'docs-link', target: '_blank', rel: 'noopener' }, 'API docs'),
      signOut,
    ),
    main,
  );

  const showSignIn = (intro?: string) => {
    page?.abort();
    page = null;
    replace(
      root,
      signInForm(() => render(), intro),
    );
  };
  signOut.addEventListener('click', () => {
    session.set(null);
    showSignIn('Signed out. Paste the API key to continue.');
  });
  session.onUnauthorized(() => {
    session.set(null);
    showSignIn('The daemon rejected the key (it may have been rotated). Paste the API key again.');
  });

  const render = () => {
    if (!session.signedIn && needKey) return showSignIn();
    if (!layout.isConnected) replace(root, layout);
    page?.abort();
    page = new AbortController();
    const signal = page.signal;
    const found = match(routes, location.pathname);
    replace(
      nav,
      NAV.map(([href, text]) => {
        const current = href === '/' ? location.pathname === '/' : location.pathname.startsWith(href);
        return h('a', { href, 'aria-current': current ? 'page' : null }, text);
      }),
    );
    if (!found) {
      replace(
        main,
        h('h1', null, 'Not found'),
        h('p', null, 'No page here. ', h('a', { href: '/' }, 'Go to the dashboard.')),
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
  void authRequired().then((required) => {
    needKey = required;
    render();
  });
}
