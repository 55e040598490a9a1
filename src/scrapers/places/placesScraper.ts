import { Errors, isApiError } from '../../contract/errors.js';
import { runSources, type ScrapeOutcome, type SourceReportT } from '../scrapeResult.js';
import { mapPlace, placeItemKey, type PlaceItemT } from './items.js';
import type { MapsClient } from './mapsClient.js';
import { cidPagePath, placePagePath, previewPath, SEARCH_PAGE_SIZE, searchPath } from './mapsRequests.js';
import type { PlaceMediaProvider } from './placeMedia.js';
import { detailJsonFromPage, detailPlace, parseGoogleJson, searchPlaces } from './placeArray.js';
import { planPlacesSources, type PlacesSource } from './placesSources.js';
import type { PlacesScrapeRequestT } from './request.js';
import { isRepeatedPage } from './upstreamProblems.js';

/** Problems of the egress (IP/proxy/session), not of a source: every later source would fail the same way. */
const RUN_WIDE = new Set(['consent_wall', 'unusual_traffic']);

/** A search that ends past this many places probably hit Google's per-search cap rather than running out. */
const SEARCH_CAP_HINT = 100;

const unexpected = (what: string) => Errors.unexpectedDocument(what);

export interface PlacesLimits {
  /** Places the run may return (max_places capped by the item quota). */
  places: number;
  /** Reviews the run may deliver in total (max_places × max_reviews capped by the review quota). */
  reviews: number;
}

/**
 * The places scraper: searches page by page (`!8i` offsets) until max_places or the upstream's end,
 * reads place pages / preview JSON for URLs and place ids (and for search results with
 * include_details), de-duplicates by feature id across sources, and asks the media provider for
 * reviews and images of each new place. Every source is reported, failed ones with a typed problem.
 */
export class PlacesScraper {
  private readonly scrapedAt = new Date().toISOString();
  private readonly items: PlaceItemT[] = [];
  private readonly seen = new Set<string>();
  private readonly warnings: string[] = [];
  private reviewsDelivered = 0;
  private reviewsCappedByQuota = false;

  constructor(
    private readonly client: MapsClient,
    private readonly media: PlaceMediaProvider,
    private readonly req: PlacesScrapeRequestT,
    private readonly limits: PlacesLimits,
    private readonly signal?: AbortSignal,
    private readonly maxSearchPages = 10,
  ) {}

  private get full(): boolean {
    return this.items.length >= Math.min(this.limits.places, this.req.max_places);
  }

  async run(): Promise<ScrapeOutcome> {
    const reports = await runSources(planPlacesSources(this.req), {
      runWide: RUN_WIDE, isFull: () => this.full, signal: this.signal, run: (source, report) => this.runSource(source, report),
    });
    if (this.reviewsCappedByQuota) this.warnings.push(`The monthly review quota allowed ${this.limits.reviews} reviews for this run; places past it have reviewsStatus "limited_by_quota".`);
    return { items: this.items, sources: reports, warnings: this.warnings, hitLimit: this.full };
  }

  private async runSource(source: PlacesSource, report: SourceReportT): Promise<void> {
    if (source.kind === 'search') return this.search(source, report);
    const lang = this.req.language;
    if (source.kind === 'place_id') {
      const res = await this.fetchOk(previewPath(source.placeId, lang), 'place');
      return this.detail(parseDetail(res, 'json'), report, { kgmid: null });
    }
    const path = source.kind === 'cid' ? cidPagePath(source.cid, lang) : placePagePath(source.path, lang);
    const res = await this.fetchOk(path, 'place');
    return this.detail(parseDetail(res, 'html'), report, { kgmid: source.kind === 'place' ? source.kgmid : null });
  }

  private async fetchOk(path: string, what: string): Promise<string> {
    const res = await this.client.get(path, this.signal);
    if (res.status === 404) throw Errors.notFound(`Google has no ${what} at this address.`);
    if (res.status >= 300 && res.status < 400) throw Errors.unexpectedRedirect(what, res.status);
    if (res.status !== 200) throw Errors.upstreamError(`Google answered HTTP ${res.status} for the ${what}.`, { status: res.status });
    return res.body;
  }

  private async detail(d: { place: unknown[]; cid: string | null }, report: SourceReportT, extra: { kgmid: string | null }): Promise<void> {
    const item = mapPlace(d.place, { scrapedAt: this.scrapedAt, language: this.req.language, searchString: null, rank: null, includeDetails: this.req.include_details, cid: d.cid, kgmid: extra.kgmid });
    if (!item) throw unexpected('a place document without a place');
    await this.emit(item, d.place, report);
  }

  private async search(source: Extract<PlacesSource, { kind: 'search' }>, report: SourceReportT): Promise<void> {
    const seenHere = new Set<string>();
    for (let page = 0; page < this.maxSearchPages && !this.full; page++) {
      const offset = page * SEARCH_PAGE_SIZE;
      const body = await this.fetchOk(searchPath(source.query, this.req.language, source.viewport, offset), 'search');
      let data: unknown;
      try {
        data = parseGoogleJson(body);
      } catch {
        throw unexpected('a search answer that is not its )]}\' JSON');
      }
      const arrays = searchPlaces(data);
      const mapped = arrays.map((p, i) => ({ array: p, item: mapPlace(p, { scrapedAt: this.scrapedAt, language: this.req.language, searchString: source.searchString, rank: offset + i + 1, includeDetails: false }) }));
      const keys = mapped.flatMap((m) => (m.item ? [placeItemKey(m.item)] : []));
      if (isRepeatedPage(keys, seenHere, page)) {
        throw Errors.silentTruncation(page + 1, seenHere.size);
      }
      for (const { array, item } of mapped) {
        if (this.full) return;
        if (!item) {
          this.filtered(report, 'unparsable');
          continue;
        }
        seenHere.add(placeItemKey(item));
        if (this.seen.has(placeItemKey(item))) {
          this.filtered(report, 'duplicate');
          continue;
        }
        if (this.req.include_details && item.fid) {
          const detailed = await this.withDetails(item);
          if (detailed) {
            await this.emit(detailed.item, detailed.array, report);
            continue;
          }
        }
        await this.emit(item, array, report);
      }
      // The end is a short (or empty) page; Google caps a search near ~120 places.
      if (arrays.length < SEARCH_PAGE_SIZE) {
        if (offset + arrays.length >= SEARCH_CAP_HINT) this.warnings.push(`${source.label}: Google ended the search after ${offset + arrays.length} places (it stops near 120 per search); split it by location for more.`);
        return;
      }
    }
    if (!this.full) this.warnings.push(`${source.label}: stopped after ${this.maxSearchPages} pages ([scrapers.places] max_search_pages).`);
  }

  /** The search result re-read from its preview JSON (hours, popular times, contact); null keeps the search data. */
  private async withDetails(item: PlaceItemT): Promise<{ item: PlaceItemT; array: unknown[] } | null> {
    try {
      const d = parseDetail(await this.fetchOk(previewPath(item.fid!, this.req.language), 'place'), 'json');
      const detailed = mapPlace(d.place, { scrapedAt: this.scrapedAt, language: this.req.language, searchString: item.searchString, rank: item.rank, includeDetails: true, cid: d.cid });
      if (!detailed || (detailed.fid && detailed.fid !== item.fid)) throw unexpected('details of another place');
      return { item: detailed, array: d.place };
    } catch (e) {
      this.signal?.throwIfAborted();
      if (!isApiError(e) || RUN_WIDE.has(e.code)) throw e;
      this.warnings.push(`details of "${item.title ?? item.fid}" (${item.fid}): ${e.message} The search data is returned without them.`);
      return null;
    }
  }

  private filtered(report: SourceReportT, reason: string): void {
    report.filtered[reason] = (report.filtered[reason] ?? 0) + 1;
  }

  /** Adds a new place (after its reviews and images); duplicates only count as filtered. */
  private async emit(item: PlaceItemT, array: unknown, report: SourceReportT): Promise<void> {
    const key = placeItemKey(item);
    if (this.seen.has(key)) return this.filtered(report, 'duplicate');
    if (this.full) return;
    this.seen.add(key);
    if (this.req.max_reviews > 0) {
      const left = Math.max(0, this.limits.reviews - this.reviewsDelivered);
      const max = Math.min(this.req.max_reviews, left);
      const capped = max < this.req.max_reviews;
      const r = await this.media.reviews(item, max, capped, this.req.language, this.signal);
      item.reviews = r.reviews;
      item.reviewsStatus = r.status;
      this.reviewsDelivered += r.reviews.length;
      if (r.status === 'limited_by_quota') this.reviewsCappedByQuota = true;
      if (r.note && r.status !== 'unavailable_signed_out') this.warnings.push(`reviews of "${item.title ?? key}": ${r.note}.`);
      if (r.status === 'unavailable_signed_out' && !this.warnings.some((w) => w.startsWith('reviews unavailable'))) {
        this.warnings.push('reviews unavailable: Google withholds reviews from signed-out clients (limited view); see reviewsStatus per place.');
      }
    }
    if (this.req.max_images > 0) {
      const im = this.media.images(item, array, this.req.max_images);
      item.images = im.images;
      item.imagesStatus = im.status;
    }
    this.items.push(item);
    report.items++;
  }
}

/** A detail document: preview JSON (`)]}'` + jd) or a place page (APP_INITIALIZATION_STATE). */
function parseDetail(body: string, kind: 'json' | 'html'): { place: unknown[]; cid: string | null } {
  let json: string | null = body;
  if (kind === 'html' || /^\s*</.test(body)) json = detailJsonFromPage(body);
  if (json === null) throw unexpected('a page without APP_INITIALIZATION_STATE place data');
  let jd: unknown;
  try {
    jd = parseGoogleJson(json);
  } catch {
    throw unexpected('place data that is not its )]}\' JSON');
  }
  const d = detailPlace(jd);
  if (!d) throw unexpected('place data without a place (jd[6])');
  return d;
}
