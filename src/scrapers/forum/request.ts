import { z } from 'zod';

export const FORUM_SORTS = ['relevance', 'hot', 'top', 'new', 'rising', 'comments'] as const;
export const TIME_FILTERS = ['hour', 'day', 'week', 'month', 'year', 'all'] as const;
export const MAX_SOURCES = 20;
const COMMUNITY = /^(?:\/?r\/)?([A-Za-z0-9][A-Za-z0-9_]{1,20})$/;

/**
 * The body of POST /workspaces/{id}/scrapers/forum/scrape and the input of the MCP tool forum.scrape
 * (one schema, so validation and messages match). Sort/time-filter combinations that depend on the
 * source kind are checked when the sources are planned (sources.ts), with a 400 naming the source.
 */
export const ForumScrapeRequest = z
  .strictObject({
    urls: z
      .array(z.url({ protocol: /^https?$/ }).max(2048))
      .max(MAX_SOURCES)
      .default([])
      .describe(
        'Reddit post, /r/<name> (also /r/a+b), /user/<name> or search URLs (www/old/new/np/m.reddit.com, redd.it).',
      ),
    search_queries: z
      .array(z.string().trim().min(1).max(512))
      .max(MAX_SOURCES)
      .default([])
      .describe('Searches to run; scoped to `community` when it is given.'),
    search_types: z
      .array(z.enum(['post', 'community', 'user']))
      .min(1)
      .max(3)
      .default(['post'])
      .describe('What search_queries look for: posts, communities or users.'),
    community: z
      .string()
      .regex(COMMUNITY, 'a community name is 2-21 letters, digits or "_", optionally prefixed with r/')
      .optional()
      .describe('Scopes search_queries to this community; alone, scrapes its listing.'),
    sort: z
      .enum(FORUM_SORTS)
      .default('new')
      .describe(
        'relevance and comments apply to searches only; rising to listings only. A sort in a URL wins for that URL.',
      ),
    time_filter: z.enum(TIME_FILTERS).optional().describe('Searches, and top listings only.'),
    include_nsfw: z.boolean().default(false),
    skip_comments: z.boolean().default(false).describe('Do not fetch the comments of posts.'),
    max_items: z
      .int()
      .min(1)
      .max(100)
      .default(25)
      .describe('Total items returned (and billed) by the run, after de-duplication.'),
    max_posts: z.int().min(1).max(1000).optional().describe('Posts per source.'),
    max_comments: z.int().min(0).max(10000).optional().describe('Comments per post (0 = none).'),
    post_date_limit: z.iso
      .datetime({ offset: true })
      .optional()
      .describe('Only posts created at or after this instant; paging stops early on time-ordered sorts.'),
    comment_date_limit: z.iso
      .datetime({ offset: true })
      .optional()
      .describe('Only comments created at or after this instant.'),
    only_new: z
      .boolean()
      .default(false)
      .describe(
        'Deliver (and bill) only posts, comments, communities and users this workspace was not delivered before (its bounded seen-set; see docs/scrapers/index.md). A post URL still reads its thread for new comments.',
      ),
  })
  .superRefine((r, ctx) => {
    const sources = r.urls.length + r.search_queries.length;
    if (sources === 0 && !r.community)
      ctx.addIssue({
        code: 'custom',
        message: 'give at least one source: urls, search_queries or community',
        path: [],
      });
    if (sources > MAX_SOURCES)
      ctx.addIssue({
        code: 'custom',
        message: `at most ${MAX_SOURCES} sources (urls + search_queries) per run`,
        path: [],
      });
  })
  .meta({ id: 'ForumScrapeRequest' });

export type ForumScrapeRequestT = z.infer<typeof ForumScrapeRequest>;

export const communityName = (raw: string): string => COMMUNITY.exec(raw)![1]!;
