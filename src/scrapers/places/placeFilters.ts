import type { PlaceItemT } from './items.js';
import type { PlacesScrapeRequestT } from './request.js';

type Filters = Pick<
  PlacesScrapeRequestT,
  'skip_without_phone' | 'skip_without_website' | 'skip_without_reviews' | 'skip_closed' | 'min_rating' | 'categories'
>;

/**
 * Why a place is dropped by the request's filters (the `filtered` reason), or null to keep it. Pure:
 * run on the search data before anything else is fetched for the place, and again after its details.
 * A value Google did not give counts as missing (a place without a rating is below any minimum).
 */
export function placeFilterReason(p: PlaceItemT, f: Filters): string | null {
  if (f.skip_closed && (p.permanentlyClosed || p.temporarilyClosed)) return 'closed';
  if (f.skip_without_phone && p.phone === null && p.phoneUnformatted === null) return 'no_phone';
  if (f.skip_without_website && p.website === null) return 'no_website';
  if (f.skip_without_reviews && !(p.reviewsCount !== null && p.reviewsCount > 0)) return 'no_reviews';
  if (f.min_rating !== undefined && !(p.totalScore !== null && p.totalScore >= f.min_rating)) return 'below_min_rating';
  if (f.categories?.length) {
    const words = f.categories.map((w) => w.toLowerCase());
    if (!p.categories.some((c) => words.some((w) => c.toLowerCase().includes(w)))) return 'category';
  }
  return null;
}
