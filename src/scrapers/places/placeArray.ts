/**
 * Reading Google Maps' positional JSON ("darray"). Google moves and drops positions without notice, so
 * every read goes through `at()` (undefined instead of a throw) and every field has its index paths in
 * one table, tried in order. Pure: no I/O, unit-tested against the replay payloads.
 */

/** The value at `path` inside nested arrays, or undefined when any step is missing or not an array. */
export function at(root: unknown, ...path: number[]): unknown {
  let cur = root;
  for (const i of path) {
    if (!Array.isArray(cur) || i < 0 || i >= cur.length) return undefined;
    cur = cur[i];
  }
  return cur;
}

/** The first path that yields a value accepted by `pick` (fallbacks for moved fields). */
export function firstAt<T>(
  root: unknown,
  paths: readonly (readonly number[])[],
  pick: (v: unknown) => T | null,
): T | null {
  for (const p of paths) {
    const v = pick(at(root, ...p));
    if (v !== null) return v;
  }
  return null;
}

export const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);
export const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
export const arr = (v: unknown): unknown[] | null => (Array.isArray(v) ? v : null);

/** The index paths of every field, in one place (gosom 2026 first, older layouts as fallbacks). */
export const PATHS = {
  title: [[11]],
  categories: [[13]],
  fullAddress: [[18]],
  addressLines: [[2]],
  street: [[183, 1, 1]],
  // gosom's borough: [183][1][2] repeats the street in the recorded payloads, so it is not a neighborhood.
  neighborhood: [[183, 1, 0]],
  city: [[183, 1, 3]],
  postalCode: [[183, 1, 4]],
  state: [[183, 1, 5]],
  countryCode: [[183, 1, 6]],
  plusCode: [[183, 2, 2, 0]],
  lat: [[9, 2]],
  lng: [[9, 3]],
  totalScore: [[4, 7]],
  reviewsCount: [[4, 8]],
  price: [[4, 2]],
  website: [[7, 0]],
  phone: [[178, 0, 0]],
  phoneInternational: [[178, 0, 1, 1, 0]],
  phoneUnformatted: [[178, 0, 3]],
  fid: [[10]],
  placeId: [[78]],
  link: [[27]],
  timezone: [[30]],
  description: [[32, 1, 1]],
  /** Every status line is read: a temporarily closed place can say "Open ⋅ …" in one block and "Temporarily closed" in the other. */
  statusText: [
    [203, 1, 4, 0],
    [34, 4, 4],
  ],
  closedFlag: [[88, 0]],
  hoursNew: [[203, 0]],
  hoursOld: [[34, 1]],
  /** Secondary hours (delivery, takeout, kitchen…): a list of labelled blocks (not in the recordings). */
  hoursSecondary: [[118]],
  popularTimes: [[84, 0]],
  distribution: [
    [175, 3],
    [52, 3],
  ],
  imageUrl: [[72, 0, 1, 6, 0]],
  imageCategories: [[171, 0]],
  imagesCount: [[37, 1]],
  ownerName: [[57, 1]],
  ownerId: [[57, 2]],
  /** Detail JSON only (outside the place array): the decimal cid. */
  detailCid: [[25, 3, 0, 13, 0, 0, 1]],
} as const;

const XHR_MARK = '/*""*/';

/**
 * Parses past Google's anti-JSON-hijacking prefix `)]}'`; also unwraps the XHR variant, `{"c":0,"d":")]}'\n…"}`
 * with a `/*""*` + `/` comment before it, after it, or both (each mark is optional on its own).
 */
export function parseGoogleJson(body: string): unknown {
  let text = body.trim();
  if (text.startsWith(XHR_MARK)) text = text.slice(XHR_MARK.length).trimStart();
  if (text.endsWith(XHR_MARK)) text = text.slice(0, -XHR_MARK.length).trimEnd();
  if (text.startsWith('{')) {
    const outer = JSON.parse(text) as { d?: unknown };
    if (typeof outer.d !== 'string') throw new SyntaxError('XHR wrapper without a "d" string');
    text = outer.d.trimStart();
  }
  if (text.startsWith(")]}'")) text = text.slice(4);
  return JSON.parse(text) as unknown;
}

/** Place arrays of a search response: `data[0][1][i][14]` for i ≥ 1 (i = 0 is the query's metadata). */
export function searchPlaces(data: unknown): unknown[] {
  const rows = arr(at(data, 0, 1)) ?? [];
  return rows
    .slice(1)
    .map((r) => at(r, 14))
    .filter((p): p is unknown[] => Array.isArray(p));
}

/**
 * A search answer as we understand it: places (organic, then sponsored), a genuinely empty list, or a
 * document we do not recognise. "Empty" needs the list's own marker: the container `data[0]` with the
 * query echo (`data[0][0]`, a string) and its list `data[0][1]` holding only the metadata row. `[]`, a
 * container without the list, or result rows none of which holds a place array (a moved structure) are
 * not empty results: they are unrecognised, never a silent success.
 *
 * Sponsored places sit in `data[2][1][0][i][15]` (Apify's 2022 crawler reads them there; the recorded
 * payloads carry none).
 */
export type SearchPage =
  { kind: 'places'; places: unknown[]; ads: unknown[] } | { kind: 'empty' } | { kind: 'unrecognised'; why: string };

export function readSearchPage(data: unknown): SearchPage {
  const container = arr(at(data, 0));
  if (!container) return { kind: 'unrecognised', why: 'no result container (data[0])' };
  const rows = arr(at(container, 1));
  if (!rows) return { kind: 'unrecognised', why: 'no result list (data[0][1])' };
  const places = searchPlaces(data);
  const ads = (arr(at(data, 2, 1, 0)) ?? []).map((r) => at(r, 15)).filter((p): p is unknown[] => Array.isArray(p));
  if (places.length || ads.length) return { kind: 'places', places, ads };
  if (rows.length > 1)
    return { kind: 'unrecognised', why: `${rows.length - 1} result rows without a place array at [14]` };
  if (typeof at(container, 0) === 'string' && Array.isArray(rows[0])) return { kind: 'empty' };
  return { kind: 'unrecognised', why: 'a result list without its query metadata' };
}

/**
 * The `)]}'` detail JSON inside a place page: the first string at index 6 (or 5) of an entry of
 * `window.APP_INITIALIZATION_STATE[3]` that starts with the prefix (what gosom's page script reads).
 */
export function detailJsonFromPage(html: string): string | null {
  const start = html.indexOf('APP_INITIALIZATION_STATE=');
  if (start < 0) return null;
  const literal = balancedArray(html, html.indexOf('[', start));
  if (!literal) return null;
  let state: unknown;
  try {
    state = JSON.parse(literal);
  } catch {
    return null;
  }
  const slot = at(state, 3);
  for (const i of [6, 5]) {
    const s = at(slot, i);
    if (typeof s === 'string' && s.startsWith(")]}'")) return s;
  }
  for (const entry of arr(slot) ?? []) {
    for (const i of [6, 5]) {
      const s = at(entry, i);
      if (typeof s === 'string' && s.startsWith(")]}'")) return s;
    }
  }
  return null;
}

/** The text of the JS array literal opening at `from`, aware of strings (brackets inside them do not count). */
function balancedArray(text: string, from: number): string | null {
  if (from < 0 || text[from] !== '[') return null;
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '[') depth++;
    else if (c === ']' && --depth === 0) return text.slice(from, i + 1);
  }
  return null;
}

/** The place array of a detail document (`jd[6]`) and the cid Google states beside it. */
export function detailPlace(jd: unknown): { place: unknown[]; cid: string | null } | null {
  const place = arr(at(jd, 6));
  if (!place || place.length === 0) return null;
  const cid = firstAt(jd, PATHS.detailCid, (v) => (typeof v === 'string' && /^\d+$/.test(v) ? v : null));
  return { place, cid };
}
