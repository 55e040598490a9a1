import { Errors, isApiError, type ApiError } from '../../contract/errors.js';
import type { ScrapeOutcome, SourceReportT, StopReason } from '../scrapeResult.js';
import { addFiltered, addProblem, ItemSink, runSources, type Offer, type SourceWork } from '../sourceScheduler.js';
import type { RequestScope } from '../tokenBucket.js';
import { mapPlace, PlaceItem, placeItemKey, type PlaceItemT } from './items.js';
import type { MapsClient } from './mapsClient.js';
import { cidPagePath, placePagePath, previewPath, SEARCH_PAGE_SIZE, searchPath } from './mapsRequests.js';
import type { PlaceMediaProvider } from './placeMedia.js';
import { detailJsonFromPage, detailPlace, parseGoogleJson, readSearchPage } from './placeArray.js';
import { placeFilterReason } from './placeFilters.js';
import { planPlacesSources, type PlacesSource } from './placesSources.js';
import type { PlacesScrapeRequestT } from './request.js';
import { isRepeatedPage } from './upstreamProblems.js';

/** Problems of the egress (IP/proxy/session), not of a source: every later source would fail the same way. */
const RUN_WIDE = new Set(['consent_wall', 'unusual_traffic']);

/** A search that ends past this many places probably hit Google's per-search cap rather than running out. */
const SEARCH_CAP_HINT = 100;

export interface PlacesLimits {
  /** Places the run may return (max_places capped by the item quota). */
  places: number;
  /** Reviews the run may deliver in total (max_places × max_reviews capped by the review quota). */
  reviews: number;
}

/** The parts of a scraper run the places scraper needs (the worker passes its RunContext). */
export interface PlacesRunOptions {
  signal?: AbortSignal | undefined;
  onWait?: ((resumeAt: Date | null) => void) | undefined;
  seen?: ReadonlySet<string> | undefined;
  saveSample?: ((what: string, body: string) => string | null) | undefined;
  maxSearchPages?: number | undefined;
}

type Work<R> = AsyncGenerator<PlaceItemT, R, Offer | undefined>;

/**
 * The places scraper: searches page by page (`!8i` offsets) until max_places or the upstream's end,
 * reads place pages / preview JSON for URLs and place ids (and for search results with
 * include_details), de-duplicates by feature id across sources, applies the request's filters before
 * anything is fetched for a place or billed, and asks the media provider for reviews and images of each
 * new place. Every source is reported, failed ones with a typed problem; a document we do not understand
 * is `unexpected_document` with a copy kept for diagnosis, never an empty success.
 */
export class PlacesScraper {
  private readonly scrapedAt = new Date().toISOString();
  private readonly sink: ItemSink;
  private readonly warnings: string[] = [];
  private readonly scope: RequestScope;
  private readonly maxSearchPages: number;
  private readonly reviewsStart: number | null;
  private reviewsDelivered = 0;
  private reviewsCappedByQuota = false;

  constructor(
    private readonly client: MapsClient,
    private readonly media: PlaceMediaProvider,
    private readonly req: PlacesScrapeRequestT,
    private readonly limits: PlacesLimits,
    private readonly o: PlacesRunOptions = {},
  ) {
    this.sink = new ItemSink(Math.min(limits.places, req.max_places), placeItemKey, PlaceItem, o.seen);
    this.scope = { signal: o.signal, onWait: o.onWait };
    this.maxSearchPages = o.maxSearchPages ?? 10;
    this.reviewsStart = req.reviews_start_date ? Date.parse(req.reviews_start_date) : null;
  }

  async run(): Promise<ScrapeOutcome> {
    const { reports, cancelled } = await runSources(planPlacesSources(this.req), {
      sink: this.sink,
      runWide: RUN_WIDE,
      signal: this.o.signal,
      limitReason: this.limits.places < this.req.max_places ? 'quota' : 'max_items',
      open: (source, report) => this.source(source, report),
    });
    if (this.reviewsCappedByQuota)
      this.warnings.push(
        `The monthly review quota allowed ${this.limits.reviews} reviews for this run; places past it have reviewsStatus "limited_by_quota".`,
      );
    return { items: this.sink.items, sources: reports, warnings: this.warnings, hitLimit: this.sink.full, cancelled };
  }

  /** A document we do not understand: unexpected_document, with a copy kept for diagnosis. */
  private unexpected(what: string, body: string): ApiError {
    const sample = this.o.saveSample?.(`google ${what}`, body) ?? null;
    return Errors.unexpectedDocument(what, sample ? { sample } : {});
  }

  private async *source(source: PlacesSource, report: SourceReportT): SourceWork {
    if (source.kind === 'search') return yield* this.search(source, report);
    const lang = this.req.language;
    if (source.kind === 'place_id') {
      const d = this.parseDetail(await this.fetchOk(previewPath(source.placeId, lang), 'place'), 'json');
      yield* this.detail(d, report, { kgmid: null });
      return 'exhausted';
    }
    const path = source.kind === 'cid' ? cidPagePath(source.cid, lang) : placePagePath(source.path, lang);
    const d = this.parseDetail(await this.fetchOk(path, 'place'), 'html');
    yield* this.detail(d, report, { kgmid: source.kind === 'place' ? source.kgmid : null });
    return 'exhausted';
  }

  private async fetchOk(path: string, what: string): Promise<string> {
    const res = await this.client.get(path, this.scope);
    if (res.status === 404) throw Errors.notFound(`Google has no ${what} at this address.`);
    if (res.status >= 300 && res.status < 400) throw Errors.unexpectedRedirect(what, res.status);
    if (res.status !== 200)
      throw Errors.upstreamError(`Google answered HTTP ${res.status} for the ${what}.`, { status: res.status });
    return res.body;
  }

  private detail(
    d: { place: unknown[]; cid: string | null },
    report: SourceReportT,
    extra: { kgmid: string | null },
  ): Work<void> {
    const item = mapPlace(d.place, {
      scrapedAt: this.scrapedAt,
      language: this.req.language,
      searchString: null,
      rank: null,
      includeDetails: this.req.include_details,
      cid: d.cid,
      kgmid: extra.kgmid,
    });
    if (!item) throw this.unexpected('a place document without a place', JSON.stringify(d.place));
    return this.place(item, d.place, report, false);
  }

  private async *search(source: Extract<PlacesSource, { kind: 'search' }>, report: SourceReportT): Work<StopReason> {
    const seenHere = new Set<string>();
    for (let page = 0; page < this.maxSearchPages; page++) {
      const offset = page * SEARCH_PAGE_SIZE;
      const body = await this.fetchOk(searchPath(source.query, this.req.language, source.viewport, offset), 'search');
      let data: unknown;
      try {
        data = parseGoogleJson(body);
      } catch {
        throw this.unexpected("a search answer that is not its )]}' JSON", body);
      }
      const read = readSearchPage(data);
      if (read.kind === 'unrecognised')
        throw this.unexpected(`a search answer we do not recognise (${read.why})`, body);
      if (read.kind === 'empty') {
        if (page === 0) this.warnings.push(`${source.label}: Google found no places.`);
        return 'exhausted';
      }
      const ctx = {
        scrapedAt: this.scrapedAt,
        language: this.req.language,
        searchString: source.searchString,
        includeDetails: false,
      };
      const organic = read.places.map((p, i) => ({ array: p, item: mapPlace(p, { ...ctx, rank: offset + i + 1 }) }));
      const keys = organic.flatMap((m) => (m.item ? [placeItemKey(m.item)] : []));
      if (isRepeatedPage(keys, seenHere, page)) throw Errors.silentTruncation(page + 1, seenHere.size);
      // Sponsored places after the organic ones, so a place that is both keeps its organic rank.
      const ads = read.ads.map((p) => ({ array: p, item: mapPlace(p, { ...ctx, rank: null, isAdvertisement: true }) }));
      for (const { array, item } of [...organic, ...ads]) {
        if (!item) {
          addFiltered(report, 'unparsable');
          continue;
        }
        if (!item.isAdvertisement) seenHere.add(placeItemKey(item));
        yield* this.place(item, array, report, this.req.include_details);
      }
      // The end is a short (or empty) page; Google caps a search near ~120 places.
      if (read.places.length < SEARCH_PAGE_SIZE) {
        if (offset + read.places.length >= SEARCH_CAP_HINT)
          this.warnings.push(
            `${source.label}: Google ended the search after ${offset + read.places.length} places (it stops near 120 per search); split it by location for more.`,
          );
        return 'exhausted';
      }
    }
    this.warnings.push(
      `${source.label}: stopped after ${this.maxSearchPages} pages ([scrapers.places] max_search_pages).`,
    );
    return 'max_search_pages';
  }

  /**
   * One place: filtered first, then (when it would be added) its details, reviews and images, then
   * offered. A duplicate or an already delivered place costs no further request.
   */
  private async *place(item: PlaceItemT, array: unknown, report: SourceReportT, withDetails: boolean): Work<void> {
    const key = placeItemKey(item);
    if (!this.sink.wouldAdd(key)) {
      yield item; // the sink counts it (duplicate, seen) without anything fetched for it
      return;
    }
    const early = placeFilterReason(item, this.req);
    if (early) return addFiltered(report, early);
    if (withDetails && item.fid) {
      const detailed = await this.withDetails(item, report);
      if (detailed) {
        ({ item, array } = detailed);
        const late = placeFilterReason(item, this.req);
        if (late) return addFiltered(report, late);
      }
    }
    let reviews = 0;
    if (this.req.max_reviews > 0) {
      const left = Math.max(0, this.limits.reviews - this.reviewsDelivered);
      const max = Math.min(this.req.max_reviews, left);
      const r = await this.media.reviews(
        item,
        {
          max,
          quotaCapped: max < this.req.max_reviews,
          language: this.req.language,
          sort: this.req.reviews_sort,
          startDate: this.reviewsStart,
        },
        this.scope,
      );
      item.reviews = r.reviews;
      item.reviewsStatus = r.status;
      reviews = r.reviews.length;
      if (r.status === 'limited_by_quota') this.reviewsCappedByQuota = true;
      if (r.note && r.status !== 'unavailable_signed_out')
        this.warnings.push(`reviews of "${item.title ?? key}": ${r.note}.`);
      if (r.status === 'unavailable_signed_out' && !this.warnings.some((w) => w.startsWith('reviews unavailable'))) {
        this.warnings.push(
          'reviews unavailable: Google withholds reviews from signed-out clients (limited view); see reviewsStatus per place.',
        );
      }
    }
    if (this.req.max_images > 0) {
      const im = this.media.images(item, array, this.req.max_images);
      item.images = im.images;
      item.imagesStatus = im.status;
    }
    // Reviews count against the run's review allowance only when their place is delivered.
    if ((yield item) === 'added') this.reviewsDelivered += reviews;
  }

  /** The search result re-read from its preview JSON (hours, popular times, contact); null keeps the search data. */
  private async withDetails(
    item: PlaceItemT,
    report: SourceReportT,
  ): Promise<{ item: PlaceItemT; array: unknown[] } | null> {
    try {
      const d = this.parseDetail(await this.fetchOk(previewPath(item.fid!, this.req.language), 'place'), 'json');
      const detailed = mapPlace(d.place, {
        scrapedAt: this.scrapedAt,
        language: this.req.language,
        searchString: item.searchString,
        rank: item.rank,
        includeDetails: true,
        cid: d.cid,
        isAdvertisement: item.isAdvertisement,
      });
      if (!detailed || (detailed.fid && detailed.fid !== item.fid))
        throw this.unexpected('details of another place', JSON.stringify(d.place));
      return { item: detailed, array: d.place };
    } catch (e) {
      this.o.signal?.throwIfAborted();
      if (!isApiError(e) || RUN_WIDE.has(e.code)) throw e;
      addProblem(report, Errors.detailsUnavailable(item.fid!, e));
      return null;
    }
  }

  /** A detail document: preview JSON (`)]}'` + jd) or a place page (APP_INITIALIZATION_STATE). */
  private parseDetail(body: string, kind: 'json' | 'html'): { place: unknown[]; cid: string | null } {
    let json: string | null = body;
    if (kind === 'html' || /^\s*</.test(body)) json = detailJsonFromPage(body);
    if (json === null) throw this.unexpected('a page without APP_INITIALIZATION_STATE place data', body);
    let jd: unknown;
    try {
      jd = parseGoogleJson(json);
    } catch {
      throw this.unexpected("place data that is not its )]}' JSON", body);
    }
    const d = detailPlace(jd);
    if (!d) throw this.unexpected('place data without a place (jd[6])', body);
    return d;
  }
}
