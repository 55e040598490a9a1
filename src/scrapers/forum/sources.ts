import { Errors } from '../../contract/errors.js';
import { communityName, TIME_FILTERS, type ForumScrapeRequestT } from './request.js';

type TimeFilter = (typeof TIME_FILTERS)[number];
export type ListingSort = 'hot' | 'new' | 'top' | 'rising' | 'controversial';
export type UserSort = 'hot' | 'new' | 'top' | 'controversial';
export type SearchSort = 'relevance' | 'hot' | 'top' | 'new' | 'comments';
export type SearchType = 'link' | 'sr' | 'user';

/** One unit of work of a run, with the upstream sort and time filter already resolved. */
export type ForumSource =
  | { kind: 'post'; label: string; postId: string }
  | { kind: 'community'; label: string; name: string; sort: ListingSort; t: TimeFilter | null }
  // `name` of a multi-community listing is "a+b" (one listing); its about pages are read one by one.
  | {
      kind: 'user';
      label: string;
      name: string;
      section: 'submitted' | 'comments' | 'overview';
      sort: UserSort;
      t: TimeFilter | null;
    }
  | {
      kind: 'search';
      label: string;
      q: string;
      community: string | null;
      types: SearchType[];
      sort: SearchSort;
      t: TimeFilter | null;
    };

/** What a URL names, before the request's sort/time filter are applied. */
export type UrlTarget =
  | { kind: 'post'; postId: string }
  | { kind: 'community'; name: string; sort: string | null; t: string | null }
  | {
      kind: 'user';
      name: string;
      section: 'submitted' | 'comments' | 'overview';
      sort: string | null;
      t: string | null;
    }
  | { kind: 'search'; q: string; community: string | null; types: SearchType[]; sort: string | null; t: string | null };

const REDDIT_HOST = /^(?:(?:www|old|new|np|m|i)\.)?reddit\.com$/i;
const ID36 = /^[a-z0-9]{1,13}$/i;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{1,20}$/;
/** Communities Reddit lists together in one URL (`/r/a+b+c`); more is refused rather than truncated. */
export const MAX_MULTI_COMMUNITIES = 20;
/** Listings of many communities that have no about page of their own. */
export const PSEUDO_COMMUNITIES = new Set(['all', 'popular']);
/** The communities of a (multi-)community name, "a+b" → ["a", "b"]. */
export const communitiesOf = (name: string): string[] => name.split('+');
const LISTING_SORTS = new Set(['hot', 'new', 'top', 'rising', 'controversial', 'best']);
const SEARCH_TYPES: Record<string, SearchType> = { link: 'link', sr: 'sr', user: 'user' };

const unsupportedUrl = (url: string, why: string) => Errors.unsupportedUrl(url, why);

/** Classifies a Reddit URL (pure). Throws 400 unsupported_url for anything it cannot scrape. */
export function classifyRedditUrl(raw: string): UrlTarget {
  const url = new URL(raw);
  const parts = url.pathname.split('/').filter(Boolean);
  const q = url.searchParams;
  if (/^redd\.it$/i.test(url.hostname)) {
    if (parts.length === 1 && ID36.test(parts[0]!)) return { kind: 'post', postId: parts[0]!.toLowerCase() };
    throw unsupportedUrl(raw, 'is not a redd.it post link');
  }
  if (!REDDIT_HOST.test(url.hostname)) throw unsupportedUrl(raw, 'is not a reddit.com URL');
  const [a, b, c, d] = parts.map((p) => decodeURIComponent(p));
  if (a === 'comments' && b && ID36.test(b)) return { kind: 'post', postId: b.toLowerCase() };
  if (a === 'search') return search(raw, q, null);
  if (a === 'r' && b) {
    const names = b.split('+');
    if (names.length > MAX_MULTI_COMMUNITIES)
      throw unsupportedUrl(raw, `lists more than ${MAX_MULTI_COMMUNITIES} communities`);
    if (names.some((n) => !NAME.test(n) || n.includes('-'))) throw unsupportedUrl(raw, 'does not name a community');
    if (names.length > 1 && c !== undefined && !(LISTING_SORTS.has(c) && parts.length === 3))
      throw unsupportedUrl(raw, 'is a multi-community page this scraper does not read (use the listing or a sort)');
    if (c === 'comments' && d && ID36.test(d)) return { kind: 'post', postId: d.toLowerCase() };
    if (c === 's') throw unsupportedUrl(raw, 'is a share link: open it once and pass the post URL it redirects to');
    if (c === 'search') return search(raw, q, ['0', 'off', 'false'].includes(q.get('restrict_sr') ?? '') ? null : b);
    if (c === undefined || (LISTING_SORTS.has(c) && parts.length === 3)) {
      return { kind: 'community', name: b, sort: c === 'best' ? 'hot' : (c ?? null), t: q.get('t') };
    }
    throw unsupportedUrl(
      raw,
      'is a community page this scraper does not read (use the community, a sort, a post or a search)',
    );
  }
  if ((a === 'user' || a === 'u') && b) {
    if (!NAME.test(b)) throw unsupportedUrl(raw, 'does not name a user');
    const section = c ?? 'submitted';
    if (section !== 'submitted' && section !== 'comments' && section !== 'overview')
      throw unsupportedUrl(raw, 'is a user page this scraper does not read (submitted, comments or overview)');
    return { kind: 'user', name: b, section, sort: q.get('sort'), t: q.get('t') };
  }
  throw unsupportedUrl(raw, 'is not a post, community, user or search URL');
}

function search(raw: string, q: URLSearchParams, community: string | null): UrlTarget {
  const text = q.get('q')?.trim();
  if (!text) throw unsupportedUrl(raw, 'is a search URL without q');
  if (text.length > 512) throw unsupportedUrl(raw, 'has a query longer than 512 characters');
  const types = (q.get('type') ?? 'link')
    .split(',')
    .map((t) => SEARCH_TYPES[t.trim()])
    .filter((t): t is SearchType => t !== undefined);
  return {
    kind: 'search',
    q: text,
    community,
    types: types.length ? [...new Set(types)] : ['link'],
    sort: q.get('sort'),
    t: q.get('t'),
  };
}

const badSort = (label: string, message: string) => Errors.unsupportedSort(label, message);

function timeFilter(label: string, raw: string | null): TimeFilter | null {
  if (raw === null) return null;
  if (!(TIME_FILTERS as readonly string[]).includes(raw))
    throw badSort(label, `time filter "${raw}" is not one of ${TIME_FILTERS.join(', ')}`);
  return raw as TimeFilter;
}

function listingSort(label: string, sort: string, t: TimeFilter | null, allowed: readonly string[]): void {
  if (!allowed.includes(sort)) {
    const hint = sort === 'relevance' || sort === 'comments' ? ' (it applies to searches only)' : '';
    throw badSort(label, `sort "${sort}" is not supported for this listing${hint}; use one of ${allowed.join(', ')}`);
  }
  if (t && sort !== 'top' && sort !== 'controversial')
    throw badSort(
      label,
      `time_filter applies to top and controversial listings and to searches, not to sort "${sort}"`,
    );
}

/**
 * Turns a validated request into sources, resolving sorts: a sort or time filter in a URL wins for
 * that URL; combinations the upstream does not serve are a 400 that names the source.
 */
export function planSources(req: ForumScrapeRequestT): ForumSource[] {
  const out: ForumSource[] = [];
  const reqT = req.time_filter ?? null;
  const community = req.community ? communityName(req.community) : null;
  for (const raw of req.urls) {
    const target = classifyRedditUrl(raw);
    const label = raw;
    switch (target.kind) {
      case 'post':
        out.push({ kind: 'post', label, postId: target.postId });
        break;
      case 'community': {
        const sort = target.sort ?? req.sort;
        const t = target.t !== null ? timeFilter(label, target.t) : target.sort === null ? reqT : null;
        listingSort(label, sort, t, ['hot', 'new', 'top', 'rising', 'controversial']);
        out.push({ kind: 'community', label, name: target.name, sort: sort as ListingSort, t });
        break;
      }
      case 'user': {
        const sort = target.sort ?? req.sort;
        const t = target.t !== null ? timeFilter(label, target.t) : target.sort === null ? reqT : null;
        listingSort(label, sort, t, ['hot', 'new', 'top', 'controversial']);
        out.push({ kind: 'user', label, name: target.name, section: target.section, sort: sort as UserSort, t });
        break;
      }
      case 'search': {
        const sort = target.sort ?? req.sort;
        if (!['relevance', 'hot', 'top', 'new', 'comments'].includes(sort))
          throw badSort(
            label,
            `sort "${sort}" is not supported for searches; use relevance, hot, top, new or comments`,
          );
        const t = target.t !== null ? timeFilter(label, target.t) : reqT;
        out.push({
          kind: 'search',
          label,
          q: target.q,
          community: target.community,
          types: target.types,
          sort: sort as SearchSort,
          t,
        });
        break;
      }
    }
  }
  const types = [
    ...new Set(req.search_types.map((t) => (t === 'post' ? 'link' : t === 'community' ? 'sr' : 'user') as SearchType)),
  ];
  for (const q of req.search_queries) {
    const label = `search:${q}`;
    if (req.sort === 'rising')
      throw badSort(
        label,
        'sort "rising" applies to listings only; use relevance, hot, top, new or comments for searches',
      );
    out.push({ kind: 'search', label, q, community, types, sort: req.sort, t: reqT });
  }
  if (req.urls.length === 0 && req.search_queries.length === 0 && community) {
    const label = `community:${community}`;
    listingSort(label, req.sort, reqT, ['hot', 'new', 'top', 'rising']);
    out.push({ kind: 'community', label, name: community, sort: req.sort as ListingSort, t: reqT });
  }
  return out;
}

/** Comment sort used for a post's thread, from the run's sort (Reddit's "best" is `confidence`). */
export const commentSort = (sort: string): 'new' | 'top' | 'confidence' =>
  sort === 'new' ? 'new' : sort === 'top' ? 'top' : 'confidence';

/** Sorts whose pages are ordered newest first, so a date limit can stop paging. */
export const isTimeOrdered = (s: ForumSource): boolean => s.kind !== 'post' && s.sort === 'new';
