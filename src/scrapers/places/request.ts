import { z } from 'zod';
import { REVIEW_SORTS } from './mapsRequests.js';
import { PLACE_ID } from './placeIds.js';

export const MAX_PER_SOURCE_FIELD = 20;

/**
 * The body of POST /workspaces/{id}/scrapers/places/scrape and the input of the MCP tool places.scrape
 * (one schema, so validation and messages match). URL kinds are checked when sources are planned
 * (placesSources.ts), with a 400 naming the URL.
 */
export const PlacesScrapeRequest = z
  .strictObject({
    search_queries: z
      .array(z.string().trim().min(1).max(256))
      .max(MAX_PER_SOURCE_FIELD)
      .default([])
      .describe('Searches as typed into Google Maps ("coffee", "dentist near Mission St"); scoped by `location`.'),
    urls: z
      .array(z.url({ protocol: /^https?$/ }).max(4096))
      .max(MAX_PER_SOURCE_FIELD)
      .default([])
      .describe(
        'Google Maps URLs: place pages (/maps/place/…/data=…!1s0x…:0x…), searches (/maps/search/<q>/@lat,lng,zoomz), ?cid=… or query_place_id=….',
      ),
    place_ids: z
      .array(z.string().regex(PLACE_ID, 'a place id looks like ChIJ… (27+ characters)'))
      .max(MAX_PER_SOURCE_FIELD)
      .default([])
      .describe('Google place ids (ChIJ…).'),
    location: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe(
        'Scopes search_queries: a place name (searched as "<query> in <location>") or "lat,lng[,zoom]" (the map viewport).',
      ),
    language: z
      .string()
      .regex(/^[a-z]{2,3}(?:-[A-Za-z]{2,4})?$/, 'a language code such as en, de or pt-BR')
      .default('en')
      .describe('Sent as hl= on every request; categories, status and relative dates come back in it.'),
    max_places: z
      .int()
      .min(1)
      .max(1000)
      .default(20)
      .describe('Total places returned (and billed) by the run, after de-duplication across sources.'),
    include_details: z
      .boolean()
      .default(false)
      .describe(
        "Fetch each search result's place details: adds opening hours, popular times and extra contact info (phoneInternational, owner).",
      ),
    max_reviews: z
      .int()
      .min(0)
      .max(100_000)
      .default(0)
      .describe(
        'Reviews per place (0 = none), in reviews_sort order; each delivered review is billed as one review unit. Signed-out access usually gets none (reviewsStatus says why).',
      ),
    reviews_sort: z
      .enum(REVIEW_SORTS)
      .default('newest')
      .describe(
        'The order Google is asked to page reviews in (the encoding is unverified against live Google; see docs/scrapers/places.md).',
      ),
    reviews_start_date: z.iso
      .datetime({ offset: true })
      .optional()
      .describe(
        'Only reviews published at or after this instant: paging stops at the first older review with reviews_sort "newest"; other sorts only filter.',
      ),
    max_images: z
      .int()
      .min(0)
      .max(100)
      .default(0)
      .describe('Images per place (0 = none): the category images of the place.'),
    skip_without_phone: z.boolean().default(false).describe('Drop (and do not bill) places without a phone number.'),
    skip_without_website: z.boolean().default(false).describe('Drop (and do not bill) places without a website.'),
    skip_without_reviews: z
      .boolean()
      .default(false)
      .describe('Drop (and do not bill) places with no reviews (reviewsCount 0 or unknown).'),
    skip_closed: z
      .boolean()
      .default(false)
      .describe('Drop (and do not bill) permanently or temporarily closed places.'),
    min_rating: z
      .number()
      .min(0)
      .max(5)
      .optional()
      .describe('Drop (and do not bill) places rated below this (or without a rating).'),
    categories: z
      .array(z.string().trim().min(1).max(100))
      .max(50)
      .optional()
      .describe(
        'Keep only places with a category containing one of these words (case-insensitive: "coffee" keeps "Coffee shop").',
      ),
    only_new: z
      .boolean()
      .default(false)
      .describe(
        'Deliver (and bill) only places this workspace was not delivered before (its bounded seen-set; see docs/scrapers/index.md).',
      ),
  })
  .superRefine((r, ctx) => {
    if (r.search_queries.length + r.urls.length + r.place_ids.length === 0) {
      ctx.addIssue({
        code: 'custom',
        message: 'give at least one source: search_queries, urls or place_ids',
        path: [],
      });
    }
  })
  .meta({ id: 'PlacesScrapeRequest' });

export type PlacesScrapeRequestT = z.infer<typeof PlacesScrapeRequest>;
