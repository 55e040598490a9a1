import type { Child } from './dom.js';

/** What a page gets: its path parameters and a signal that aborts when the user navigates away. */
export interface PageContext {
  params: Record<string, string>;
  signal: AbortSignal;
  query: URLSearchParams;
}
export type Page = (ctx: PageContext) => Child | Promise<Child>;
export interface Route {
  pattern: RegExp;
  keys: string[];
  page: Page;
  title: string;
}

/** '/collections/:id' -> a route; parameters are single path segments. */
export function route(path: string, title: string, page: Page): Route {
  const keys: string[] = [];
  const pattern = new RegExp(
    `^${path.replace(/:([a-z_]+)/g, (_, k: string) => {
      keys.push(k);
      return '([^/]+)';
    })}/?$`,
  );
  return { pattern, keys, page, title };
}

export function match(routes: Route[], pathname: string): { route: Route; params: Record<string, string> } | null {
  for (const r of routes) {
    const m = r.pattern.exec(pathname);
    if (m) return { route: r, params: Object.fromEntries(r.keys.map((k, i) => [k, decodeURIComponent(m[i + 1]!)])) };
  }
  return null;
}

let onNavigate: (() => void) | null = null;

/** History navigation without a reload, so the key in memory survives moving between pages. */
export function navigate(path: string, replace = false): void {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  onNavigate?.();
}

export function listen(render: () => void): void {
  onNavigate = render;
  window.addEventListener('popstate', render);
  document.addEventListener('click', (e) => {
    const a = (e.target as Element | null)?.closest?.('a');
    if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || a.target) return;
    const url = new URL(a.href, location.href);
    if (
      url.origin !== location.origin ||
      url.pathname.startsWith('/v1/') ||
      url.pathname === '/docs' ||
      a.hasAttribute('download')
    )
      return;
    e.preventDefault();
    navigate(url.pathname + url.search);
  });
}
