/**
 * The upstream requests of the HTTP-only path, as URLs relative to the configured base. The `pb`
 * ("protobuf in the URL") templates are the ones open-source scrapers send (gosom fast mode for search,
 * its "Dec 2025" listugcposts format for reviews). Pure, unit-tested.
 */

/** Results per search page (`!7i`): what Google serves per request (~20). */
export const SEARCH_PAGE_SIZE = 20;
/** Reviews per listugcposts page (`!2m2!1i`). */
export const REVIEW_PAGE_SIZE = 20;

export interface Viewport {
  lat: number;
  lng: number;
  zoom: number;
}
/** Without a viewport Google still resolves "<query> in <place>"; the world view does not bias it. */
export const WORLD: Viewport = { lat: 0, lng: 0, zoom: 3 };

/** Metres the map view spans at a zoom level (the `!1d` "altitude"); 3826.9 m at zoom 14 in gosom's template. */
const span = (zoom: number) => 62_700_000 / 2 ** zoom;

/** The search `pb`: viewport, page size `!7i` and result offset `!8i` (offset = page × size). */
export function searchPb(vp: Viewport, offset: number, pageSize = SEARCH_PAGE_SIZE): string {
  return (
    `!4m12!1m3!1d${span(vp.zoom)}!2d${vp.lng}!3d${vp.lat}!2m3!1f0!2f0!3f0!3m2!1i1024!2i768!4f${vp.zoom}!7i${pageSize}!8i${offset}` +
    '!10b1!12m22!1m3!18b1!30b1!34e1!2m3!5m1!6e2!20e3!4b0!10b1!12b1!13b1!16b1!17m1!3e1!20m3!5e2!6b1!14b1!46m1!1b0!96b1!19m4!2m3!1i360!2i120!4i8'
  );
}

/** The offset a search `pb` asks for (`!8i`), or 0. */
export const pbOffset = (pb: string): number => Number(/!8i(\d+)/.exec(pb)?.[1] ?? 0);

export function searchPath(
  query: string,
  language: string,
  vp: Viewport,
  offset: number,
  pageSize = SEARCH_PAGE_SIZE,
): string {
  const p = new URLSearchParams({
    tbm: 'map',
    authuser: '0',
    hl: language,
    q: query,
    pb: searchPb(vp, offset, pageSize),
  });
  return `/search?${p.toString()}`;
}

/** Place details as JSON (the same document as the place page's APP_INITIALIZATION_STATE[3][6]). */
export function previewPath(id: string, language: string): string {
  const p = new URLSearchParams({
    authuser: '0',
    hl: language,
    pb: `!1m2!1s${id}!2b1!12m4!2m3!1i360!2i120!4i8!13m1!1b1`,
  });
  return `/maps/preview/place?${p.toString()}`;
}

/** A place page for a cid (`/maps?cid=`), which Google answers with the place page HTML. */
export function cidPagePath(cid: string, language: string): string {
  return `/maps?${new URLSearchParams({ cid, hl: language }).toString()}`;
}

/** The place page of a place URL, on the configured base (the user's host is never contacted). */
export function placePagePath(path: string, language: string): string {
  return `${path}?${new URLSearchParams({ hl: language }).toString()}`;
}

export const REVIEW_SORTS = ['newest', 'most_relevant', 'highest_rating', 'lowest_rating'] as const;
export type ReviewSort = (typeof REVIEW_SORTS)[number];
/**
 * The sort enum of listugcposts' last field, `!13m1!1e<n>`: 1 most relevant, 2 newest, 3 highest, 4 lowest.
 * gosom's template fixes it at 1; the values are those of YasogaN/google-maps-review-scraper (its
 * listugcposts.ts and endpoint notes) and of HazelnutParadise/insyra's GetReviews. Not in the recordings
 * and not verified against live Google.
 */
export const REVIEW_SORT_ENUM: Record<ReviewSort, number> = {
  most_relevant: 1,
  newest: 2,
  highest_rating: 3,
  lowest_rating: 4,
};

/** A listugcposts page: `!2m2!1i<size>!2s<token>` pages, `!5m2!1s<request id>` (21 random characters), `!13m1!1e<sort>`. */
export function reviewsPath(
  id: string,
  language: string,
  pageSize: number,
  token: string | null,
  requestId: string,
  sort: ReviewSort = 'most_relevant',
): string {
  const pb = `!1m6!1s${id}!6m4!4m1!1e1!4m1!1e3!2m2!1i${pageSize}!2s${token ?? ''}!5m2!1s${requestId}!7e81!8m9!2b1!3b1!5b1!7b1!12m4!1b1!2b1!4m1!1e1!11m0!13m1!1e${REVIEW_SORT_ENUM[sort]}`;
  return `/maps/rpc/listugcposts?${new URLSearchParams({ authuser: '0', hl: language, pb }).toString()}`;
}

/** The sort a listugcposts `pb` asks for (`!13m1!1e<n>`), or null. */
export function pbReviewSort(pb: string): ReviewSort | null {
  const n = Number(/!13m1!1e(\d)/.exec(pb)?.[1]);
  return (Object.entries(REVIEW_SORT_ENUM).find(([, v]) => v === n)?.[0] as ReviewSort | undefined) ?? null;
}

/** The page token a listugcposts `pb` carries (`!2s…` after the page size), or null on the first page. */
export const pbReviewToken = (pb: string): string | null => /!2m2!1i\d+!2s([^!]*)/.exec(pb)?.[1] || null;

/** Reviews to ask for next: a full page unless fewer remain. */
export const reviewPageSize = (remaining: number): number => Math.max(1, Math.min(REVIEW_PAGE_SIZE, remaining));

/** The next page token: `json[1]` when it is a new non-empty string; null ends paging (also on a repeat, which would loop). */
export function nextReviewToken(doc: unknown, seen: Set<string>): string | null {
  const token = Array.isArray(doc) ? doc[1] : undefined;
  if (typeof token !== 'string' || token === '' || seen.has(token)) return null;
  seen.add(token);
  return token;
}
