import { randomBytes } from 'node:crypto';
import { Errors, isApiError } from '../../contract/errors.js';
import { categoryImages, mapReview, reviewElements, type PlaceItemT, type PlaceReviewT } from './items.js';
import type { MapsClient } from './mapsClient.js';
import type { RequestScope } from '../tokenBucket.js';
import { nextReviewToken, reviewPageSize, reviewsPath, type ReviewSort } from './mapsRequests.js';
import { parseGoogleJson } from './placeArray.js';

export interface ReviewsResult {
  reviews: PlaceReviewT[];
  status: PlaceItemT['reviewsStatus'];
  note?: string;
}
export interface ReviewsRequest {
  /** Reviews wanted for this place (max_reviews, or less when the review quota runs short). */
  max: number;
  /** `max` was lowered by the review quota (for the status). */
  quotaCapped: boolean;
  language: string;
  sort: ReviewSort;
  /** Only reviews published at or after this (ms since epoch): newest-first paging stops at the first older one. */
  startDate: number | null;
}
export interface ImagesResult {
  images: PlaceItemT['images'];
  status: PlaceItemT['imagesStatus'];
}

/**
 * Where reviews and images come from. The HTTP provider below is the signed-out path; a signed-in
 * session, a browser worker or the official Places API would be other implementations of this interface.
 */
export interface PlaceMediaProvider {
  reviews(place: PlaceItemT, want: ReviewsRequest, scope?: RequestScope): Promise<ReviewsResult>;
  images(place: PlaceItemT, placeArray: unknown, max: number): ImagesResult;
}

/** Upstream problems that concern the egress, not this place's reviews: the run must see them. */
const EGRESS_PROBLEMS = new Set(['consent_wall', 'unusual_traffic']);

/**
 * Reviews through `listugcposts` (pages of 20, `json[1]` = next token), images from the place's own
 * category photos. Google's signed-out "limited view" (since Feb 2026) answers 403, or an empty first
 * page for a place with reviews: that is `unavailable_signed_out`, never an empty success.
 */
export class HttpPlaceMediaProvider implements PlaceMediaProvider {
  constructor(private readonly client: MapsClient) {}

  async reviews(place: PlaceItemT, want: ReviewsRequest, scope?: RequestScope): Promise<ReviewsResult> {
    const { max, quotaCapped, language, sort, startDate } = want;
    if (max <= 0) return { reviews: [], status: quotaCapped ? 'limited_by_quota' : 'not_requested' };
    if (place.reviewsCount === 0) return { reviews: [], status: 'complete' };
    const id = place.fid ?? place.placeId;
    if (!id)
      return { reviews: [], status: 'failed', note: 'the place has no feature id or place id to ask reviews for' };
    const requestId = randomBytes(16).toString('base64url').slice(0, 21);
    const out: PlaceReviewT[] = [];
    const seenIds = new Set<string>();
    const seenTokens = new Set<string>();
    let token: string | null = null;
    for (let page = 0; ; page++) {
      let doc: unknown;
      try {
        const res = await this.client.get(
          reviewsPath(id, language, reviewPageSize(max - out.length), token, requestId, sort),
          scope,
        );
        if (res.status === 401 || res.status === 403) {
          return page === 0
            ? {
                reviews: out,
                status: 'unavailable_signed_out',
                note: `Google refused reviews to a signed-out client (HTTP ${res.status})`,
              }
            : { reviews: out, status: 'ended_early', note: `Google refused page ${page + 1} (HTTP ${res.status})` };
        }
        if (res.status !== 200) throw Errors.upstreamError(`Google answered HTTP ${res.status} for reviews.`);
        doc = parseGoogleJson(res.body);
      } catch (e) {
        scope?.signal?.throwIfAborted();
        if (isApiError(e) && EGRESS_PROBLEMS.has(e.code)) throw e;
        const why = isApiError(e) ? e.message : 'the reviews page is not the expected JSON';
        return { reviews: out, status: out.length ? 'ended_early' : 'failed', note: why };
      }
      const elements = reviewElements(doc);
      if (page === 0 && elements.length === 0 && (place.reviewsCount ?? 0) > 0) {
        return {
          reviews: [],
          status: 'unavailable_signed_out',
          note: `the place has ${place.reviewsCount} reviews but Google returned none (signed-out limited view)`,
        };
      }
      let older = false;
      for (const el of elements) {
        const r = mapReview(el);
        if (!r || seenIds.has(r.reviewId)) continue;
        seenIds.add(r.reviewId);
        if (startDate !== null && r.publishedAtDate !== null && Date.parse(r.publishedAtDate) < startDate) {
          older = true;
          if (sort === 'newest') break;
          continue;
        }
        out.push(r);
        if (out.length >= max) break;
      }
      // Newest first, everything after an older review is older too.
      if (older && sort === 'newest' && out.length < max) return { reviews: out, status: 'limited_by_start_date' };
      token = nextReviewToken(doc, seenTokens);
      if (out.length >= max) {
        const more = token !== null || (place.reviewsCount ?? 0) > out.length;
        return {
          reviews: out,
          status: !more ? 'complete' : quotaCapped ? 'limited_by_quota' : 'limited_by_max_reviews',
        };
      }
      if (token === null || elements.length === 0) {
        const short = place.reviewsCount !== null && out.length < place.reviewsCount;
        return short
          ? {
              reviews: out,
              status: 'ended_early',
              note: `Google stopped paging after ${out.length} of ${place.reviewsCount} reviews`,
            }
          : { reviews: out, status: 'complete' };
      }
    }
  }

  images(place: PlaceItemT, placeArray: unknown, max: number): ImagesResult {
    if (max <= 0) return { images: [], status: 'not_requested' };
    const all = categoryImages(placeArray);
    if (all.length === 0)
      return { images: [], status: (place.imagesCount ?? 0) > 0 ? 'unavailable_signed_out' : 'none' };
    return { images: all.slice(0, max), status: all.length > max ? 'limited_by_max_images' : 'complete' };
  }
}
