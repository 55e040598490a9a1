import { z } from 'zod';
import { cidFromFid } from './placeIds.js';
import { arr, at, firstAt, num, PATHS, str } from './placeArray.js';

/**
 * The flat place item (field names as users of the Apify Google Maps scraper know them). A value the
 * upstream did not give is null, never a placeholder: `website: null` means "no website" and is a lead signal.
 */
const s = z.string().nullable();
const n = z.number().nullable();

export const REVIEWS_STATUS = [
  'not_requested',
  'complete',
  'limited_by_max_reviews',
  'limited_by_quota',
  'limited_by_start_date',
  'ended_early',
  'unavailable_signed_out',
  'failed',
] as const;
export const IMAGES_STATUS = [
  'not_requested',
  'complete',
  'limited_by_max_images',
  'none',
  'unavailable_signed_out',
] as const;

export const PlaceReview = z
  .object({
    reviewId: z.string(),
    text: s,
    textTranslated: s,
    stars: n,
    publishedAtDate: s.describe('ISO 8601, from the upstream microsecond timestamp.'),
    publishAt: s.describe('The relative date as Google shows it ("3 weeks ago"), localised.'),
    likesCount: n.describe('"Helpful" votes (`[4][2]` of the review element in the recorded format).'),
    language: s,
    reviewer: z.object({
      name: s,
      url: s,
      photoUrl: s,
      id: s,
      numberOfReviews: n.describe('Reviews the reviewer has written.'),
    }),
    ownerResponse: z.object({ text: s, publishedAtDate: s }).nullable(),
    imageUrls: z.array(z.string()),
  })
  .meta({ id: 'PlaceReview' });
export type PlaceReviewT = z.infer<typeof PlaceReview>;

const DayHours = z.object({ day: z.string(), hours: z.string() });

export const PlaceItem = z
  .object({
    title: s,
    categoryName: s,
    categories: z.array(z.string()),
    placeId: s.describe('ChIJ… place id; can be missing upstream.'),
    cid: s.describe('Decimal customer id, from the hex feature id.'),
    fid: s.describe('Feature ("data") id, 0x…:0x…; the de-duplication key.'),
    kgmid: s,
    url: z.string(),
    address: s,
    neighborhood: s,
    street: s,
    city: s,
    postalCode: s,
    state: s,
    countryCode: s,
    plusCode: s,
    location: z.object({ lat: z.number(), lng: z.number() }).nullable(),
    website: s.describe('Exactly null when the place lists no website.'),
    phone: s,
    phoneUnformatted: s,
    price: s,
    totalScore: n,
    reviewsCount: n,
    reviewsDistribution: z
      .object({
        oneStar: z.number(),
        twoStar: z.number(),
        threeStar: z.number(),
        fourStar: z.number(),
        fiveStar: z.number(),
      })
      .nullable(),
    permanentlyClosed: z.boolean(),
    temporarilyClosed: z.boolean(),
    openingStatus: s.describe('The status line as Google shows it ("Open ⋅ Closes 6 pm"), localised.'),
    timezone: s,
    description: s,
    imageUrl: s,
    imagesCount: n,
    openingHours: z.array(DayHours).nullable().describe('include_details only.'),
    additionalOpeningHours: z
      .record(z.string(), z.array(DayHours))
      .nullable()
      .describe(
        'include_details only: secondary hours by the kind Google labels them with ("Delivery", "Takeout", "Kitchen"…), as Apify names them; null when the place lists none.',
      ),
    popularTimes: z
      .array(
        z.object({
          day: z.int().describe('1 = Monday … 7 = Sunday'),
          hours: z.array(z.object({ hour: z.int(), occupancyPercent: z.number() })),
        }),
      )
      .nullable()
      .describe('include_details only; hidden from signed-out clients since 2026 (then null).'),
    phoneInternational: s.describe('include_details only.'),
    ownerName: s.describe('include_details only.'),
    ownerId: s.describe('include_details only.'),
    reviews: z.array(PlaceReview),
    reviewsStatus: z
      .enum(REVIEWS_STATUS)
      .describe(
        'Why `reviews` holds what it holds; unavailable_signed_out is Google withholding them, not "no reviews".',
      ),
    images: z.array(z.object({ title: s, url: z.string() })),
    imagesStatus: z.enum(IMAGES_STATUS),
    isAdvertisement: z.boolean().describe('A sponsored result of the search (kept, flagged).'),
    searchString: s.describe('The query this place was found by; null for urls/place_ids.'),
    rank: z.int().nullable().describe('1-based position in its search, across pages.'),
    language: z.string(),
    scrapedAt: z.string(),
  })
  .meta({ id: 'PlaceItem' });
export type PlaceItemT = z.infer<typeof PlaceItem>;

/** De-duplication and billing key: feature id, else place id, else cid. */
export const placeItemKey = (item: unknown): string => {
  const p = item as PlaceItemT;
  return p.fid
    ? `fid:${p.fid}`
    : p.placeId
      ? `pid:${p.placeId}`
      : p.cid
        ? `cid:${p.cid}`
        : `title:${p.title ?? ''}|${p.address ?? ''}`;
};

const strings = (v: unknown): string[] => (arr(v) ?? []).filter((x): x is string => typeof x === 'string' && x !== '');
const micros = (v: unknown): string | null => {
  const x = num(v);
  return x !== null && x > 0 ? new Date(Math.floor(x / 1000)).toISOString() : null;
};

/** Google's website field may be a /url?q=… redirect; the target is what users want. */
export function unwrapWebsite(v: unknown): string | null {
  const raw = str(v);
  if (!raw) return null;
  if (/^\/url\?|^https?:\/\/[^/]*google\.[^/]+\/url\?/.test(raw)) {
    const target =
      new URL(raw, 'https://www.google.com').searchParams.get('q') ??
      new URL(raw, 'https://www.google.com').searchParams.get('url');
    return target && /^https?:\/\//.test(target) ? target : null;
  }
  return /^https?:\/\//.test(raw) ? raw : null;
}

/** The address without the leading "Title, " Google puts in `[18]`; else the address lines joined. */
function address(place: unknown, title: string | null): string | null {
  const full = firstAt(place, PATHS.fullAddress, str);
  if (full) return title && full.startsWith(`${title}, `) ? full.slice(title.length + 2) : full;
  const lines = strings(at(place, ...PATHS.addressLines[0]!));
  return lines.length ? lines.join(', ') : null;
}

const CLOSED_PERMANENTLY =
  /permanently closed|dauerhaft geschlossen|définitivement fermé|cerrado permanentemente|chiuso definitivamente|permanentemente fechado/i;
const CLOSED_TEMPORARILY =
  /temporarily closed|vorübergehend geschlossen|fermé temporairement|cerrado temporalmente|chiuso temporaneamente|temporariamente fechado/i;

/**
 * One day of an hours block: `[day, dayNum, [y,m,d], [[text, [[h],[h]]], …]]` (the 2025 layout) or the
 * alternate `[day, [text, …]]` layout, which also appears inside the new block; both are read per day.
 */
function dayHours(d: unknown): { day: string; hours: string } | null {
  const day = str(at(d, 0));
  if (!day) return null;
  const slots = strings((arr(at(d, 3)) ?? []).map((slot) => at(slot, 0)));
  const hours = slots.length ? slots : strings(at(d, 1));
  return hours.length ? { day, hours: hours.join(', ') } : null;
}

/** The days of the first hours block that has any (`[203][0]`, else `[34][1]`), each day read in either layout. */
function openingHours(place: unknown): PlaceItemT['openingHours'] {
  for (const path of [PATHS.hoursNew[0]!, PATHS.hoursOld[0]!]) {
    const out = dayList(at(place, ...path));
    if (out.length) return out;
  }
  return null;
}

const dayList = (v: unknown): { day: string; hours: string }[] =>
  (arr(v) ?? []).map(dayHours).filter((d): d is { day: string; hours: string } => d !== null);

/**
 * Secondary hours (`[118]`): labelled blocks, each with its label (a string of the block, or of a part of
 * it such as `[label, kind]`) and its day rows (a part of the block, either day layout). The position is
 * derived from public reports, not from the recordings, so the block is read by shape, not by index.
 */
function additionalOpeningHours(place: unknown): PlaceItemT['additionalOpeningHours'] {
  const out: Record<string, { day: string; hours: string }[]> = {};
  for (const block of arr(at(place, ...PATHS.hoursSecondary[0]!)) ?? []) {
    const parts = arr(block) ?? [];
    const days = parts.map(dayList).find((d) => d.length > 0);
    const label =
      parts.map(str).find((x) => x !== null) ??
      parts.flatMap((part) => (dayList(part).length ? [] : strings(part))).at(0) ??
      null;
    if (days && label && !(label in out)) out[label] = days;
  }
  return Object.keys(out).length ? out : null;
}

function popularTimes(place: unknown): PlaceItemT['popularTimes'] {
  const days = arr(at(place, ...PATHS.popularTimes[0]!));
  if (!days || !days.length) return null;
  const out = days
    .map((d) => {
      const day = num(at(d, 0));
      const hours = (arr(at(d, 1)) ?? [])
        .map((h) => ({ hour: num(at(h, 0)), occupancyPercent: num(at(h, 1)) }))
        .filter(
          (h): h is { hour: number; occupancyPercent: number } =>
            h.hour !== null && h.occupancyPercent !== null && Number.isInteger(h.hour),
        );
      return day !== null && Number.isInteger(day) && day >= 1 && day <= 7 ? { day, hours } : null;
    })
    .filter((d): d is NonNullable<typeof d> => d !== null);
  return out.length ? out : null;
}

function distribution(place: unknown): PlaceItemT['reviewsDistribution'] {
  const d = firstAt(place, PATHS.distribution, (v) => {
    const a = arr(v);
    return a && a.length >= 5 && a.slice(0, 5).every((x) => num(x) !== null) ? (a as number[]) : null;
  });
  return d ? { oneStar: d[0]!, twoStar: d[1]!, threeStar: d[2]!, fourStar: d[3]!, fiveStar: d[4]! } : null;
}

/** Category images (`[171][0][i]`: title, url), the first `max`. */
export function categoryImages(place: unknown): { title: string | null; url: string }[] {
  return (arr(at(place, ...PATHS.imageCategories[0]!)) ?? [])
    .map((c) => ({ title: str(at(c, 2)), url: str(at(c, 3, 0, 6, 0)) }))
    .filter((c): c is { title: string | null; url: string } => c.url !== null);
}

export interface PlaceContext {
  scrapedAt: string;
  language: string;
  searchString: string | null;
  rank: number | null;
  includeDetails: boolean;
  /** The cid the detail document states beside the place (preferred when present). */
  cid?: string | null;
  kgmid?: string | null;
  /** A sponsored search result. */
  isAdvertisement?: boolean;
}

/**
 * One place array → an item, every field through the index table; reviews and images are filled in by
 * the media provider afterwards. Null when the array has neither a title nor an identifier (not a place).
 */
export function mapPlace(place: unknown, ctx: PlaceContext): PlaceItemT | null {
  const title = firstAt(place, PATHS.title, str);
  const fid = firstAt(place, PATHS.fid, (v) => {
    const x = str(v);
    return x && cidFromFid(x) !== null ? x.toLowerCase() : null;
  });
  const placeId = firstAt(place, PATHS.placeId, str);
  if (!title && !fid && !placeId) return null;
  const cid = ctx.cid ?? (fid ? cidFromFid(fid) : null);
  const lat = firstAt(place, PATHS.lat, num);
  const lng = firstAt(place, PATHS.lng, num);
  const status = firstAt(place, PATHS.statusText, str);
  const statuses = PATHS.statusText.map((p) => str(at(place, ...p))).filter((x): x is string => x !== null);
  const link = firstAt(place, PATHS.link, (v) => {
    const x = str(v);
    return x && /^https?:\/\//.test(x) ? x : null;
  });
  const details = ctx.includeDetails;
  return {
    title,
    categoryName: strings(at(place, ...PATHS.categories[0]!))[0] ?? null,
    categories: strings(at(place, ...PATHS.categories[0]!)),
    placeId,
    cid,
    fid,
    kgmid: ctx.kgmid ?? null,
    url:
      link ??
      (placeId
        ? `https://www.google.com/maps/search/?api=1&query=${encodeURIComponent(title ?? '')}&query_place_id=${placeId}`
        : cid
          ? `https://www.google.com/maps?cid=${cid}`
          : `https://www.google.com/maps/search/${encodeURIComponent(title ?? '')}`),
    address: address(place, title),
    neighborhood: firstAt(place, PATHS.neighborhood, str),
    street: firstAt(place, PATHS.street, str),
    city: firstAt(place, PATHS.city, str),
    postalCode: firstAt(place, PATHS.postalCode, str),
    state: firstAt(place, PATHS.state, str),
    countryCode: firstAt(place, PATHS.countryCode, str),
    plusCode: firstAt(place, PATHS.plusCode, str),
    location: lat !== null && lng !== null ? { lat, lng } : null,
    website: firstAt(place, PATHS.website, unwrapWebsite),
    phone: firstAt(place, PATHS.phone, str),
    phoneUnformatted: firstAt(place, PATHS.phoneUnformatted, str),
    price: firstAt(place, PATHS.price, str),
    totalScore: firstAt(place, PATHS.totalScore, num),
    reviewsCount: firstAt(place, PATHS.reviewsCount, num),
    reviewsDistribution: distribution(place),
    permanentlyClosed:
      firstAt(place, PATHS.closedFlag, str) === 'CLOSED' || statuses.some((x) => CLOSED_PERMANENTLY.test(x)),
    temporarilyClosed: statuses.some((x) => CLOSED_TEMPORARILY.test(x)),
    // The closure line wins over an "Open ⋅ …" line from the other block.
    openingStatus: statuses.find((x) => CLOSED_TEMPORARILY.test(x) || CLOSED_PERMANENTLY.test(x)) ?? status,
    timezone: firstAt(place, PATHS.timezone, str),
    description: firstAt(place, PATHS.description, str),
    imageUrl: firstAt(place, PATHS.imageUrl, str),
    imagesCount: firstAt(place, PATHS.imagesCount, num),
    openingHours: details ? openingHours(place) : null,
    additionalOpeningHours: details ? additionalOpeningHours(place) : null,
    popularTimes: details ? popularTimes(place) : null,
    phoneInternational: details ? firstAt(place, PATHS.phoneInternational, str) : null,
    ownerName: details ? firstAt(place, PATHS.ownerName, str) : null,
    ownerId: details ? firstAt(place, PATHS.ownerId, str) : null,
    reviews: [],
    reviewsStatus: 'not_requested',
    images: [],
    imagesStatus: 'not_requested',
    isAdvertisement: ctx.isAdvertisement ?? false,
    searchString: ctx.searchString,
    rank: ctx.rank,
    language: ctx.language,
    scrapedAt: ctx.scrapedAt,
  };
}

/**
 * One review element (`listugcposts` `json[2][i][0]`), or null without an id. Paths as gosom `parseReviews`;
 * likes (`[4][2]`) and the reviewer's id and review count (`[1][4][5][3]`, `[1][4][5][5]`) as the recorded
 * payloads carry them.
 */
export function mapReview(el: unknown): PlaceReviewT | null {
  const reviewId = str(at(el, 0));
  if (!reviewId) return null;
  const reply = at(el, 3);
  const hasReply = Array.isArray(reply) && reply.length >= 15 && at(reply, 1) !== null && at(reply, 1) !== undefined;
  return {
    reviewId,
    text: str(at(el, 2, 15, 0, 0)),
    textTranslated: str(at(el, 2, 15, 1, 0)),
    stars: num(at(el, 2, 0, 0)) ?? num(at(el, 2, 8, 1)),
    publishedAtDate: micros(at(el, 1, 2)),
    publishAt: str(at(el, 1, 6)),
    likesCount: num(at(el, 4, 2)),
    language: str(at(el, 2, 14, 0)),
    reviewer: {
      name: str(at(el, 1, 4, 5, 0)),
      url: str(at(el, 1, 4, 2, 0)),
      photoUrl: str(at(el, 1, 4, 5, 1)),
      id: str(at(el, 1, 4, 5, 3)),
      numberOfReviews: num(at(el, 1, 4, 5, 5)),
    },
    ownerResponse: hasReply ? { text: str(at(reply, 14, 0, 0)), publishedAtDate: micros(at(reply, 1)) } : null,
    imageUrls: (arr(at(el, 2, 2)) ?? []).map((p) => str(at(p, 1, 6, 0))).filter((u): u is string => u !== null),
  };
}

/** The review elements of a listugcposts page (`json[2][i][0]`). */
export function reviewElements(doc: unknown): unknown[] {
  return (arr(at(doc, 2)) ?? []).map((r) => at(r, 0)).filter((e) => Array.isArray(e));
}
