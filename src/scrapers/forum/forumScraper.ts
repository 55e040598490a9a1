import { Errors } from '../../contract/errors.js';
import { runSources, type ScrapeOutcome, type SourceReportT } from '../scrapeResult.js';
import { mapComment, mapCommunity, mapPost, mapUser, type ForumCommentT, type ForumItemT } from './items.js';
import type { RedditClient } from './redditClient.js';
import type { ForumScrapeRequestT } from './request.js';
import { commentSort, isTimeOrdered, planSources, type ForumSource } from './sources.js';

type Raw = Record<string, unknown>;
interface Thing { kind: string; data: Raw }
interface Listing { after: string | null; children: Thing[] }

const PAGE_MAX = 100;
const MORE_CHUNK = 100;
/** Problems that concern the credential, not the source: every later source would fail the same way. */
const RUN_WIDE = new Set(['upstream_blocked', 'upstream_auth_failed', 'scraper_not_configured']);

const asObj = (v: unknown): Raw | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Raw) : null);
const badShape = (what: string) => Errors.upstreamError(`Reddit answered with an unexpected document (${what}).`);

function asListing(v: unknown): Listing {
  const o = asObj(v);
  const data = asObj(o?.data);
  if (o?.kind !== 'Listing' || !data || !Array.isArray(data.children)) throw badShape('expected a Listing');
  return { after: typeof data.after === 'string' ? data.after : null, children: data.children.filter((c): c is Thing => !!asObj(c) && typeof (c as Thing).kind === 'string' && !!asObj((c as Thing).data)) };
}

function asThing(v: unknown, kind: string): Raw {
  const o = asObj(v);
  if (o?.kind !== kind || !asObj(o.data)) throw badShape(`expected a ${kind}`);
  return o.data as Raw;
}

/** Items of one run, de-duplicated by dataType+id, never beyond the limit. */
class ItemSink {
  readonly items: ForumItemT[] = [];
  private readonly seen = new Set<string>();
  constructor(readonly limit: number) {}
  get full(): boolean { return this.items.length >= this.limit; }
  get remaining(): number { return this.limit - this.items.length; }
  add(item: ForumItemT): 'added' | 'duplicate' | 'full' {
    const key = `${item.dataType}:${item.id}`;
    if (this.seen.has(key)) return 'duplicate';
    if (this.full) return 'full';
    this.seen.add(key);
    this.items.push(item);
    return 'added';
  }
}

interface Stub { kind: 'load' | 'continue'; parentId: string; children: string[]; count: number }

/**
 * The forum (Reddit) scraper: plans sources from the request, pages listings with `after`, expands
 * comment trees (`more` stubs through /api/morechildren, "continue this thread" through the
 * comment's own thread) and reports every source, failed ones with their reason.
 */
export class ForumScraper {
  private readonly scrapedAt = new Date().toISOString();
  private readonly sink: ItemSink;
  private readonly postDateLimit: number | null;
  private readonly commentDateLimit: number | null;
  private readonly warnings: string[] = [];

  constructor(
    private readonly client: RedditClient,
    private readonly req: ForumScrapeRequestT,
    limit: number,
    private readonly signal?: AbortSignal,
    private readonly maxMoreRequests = 32,
  ) {
    this.sink = new ItemSink(Math.min(limit, req.max_items));
    this.postDateLimit = req.post_date_limit ? Date.parse(req.post_date_limit) / 1000 : null;
    this.commentDateLimit = req.comment_date_limit ? Date.parse(req.comment_date_limit) / 1000 : null;
  }

  async run(): Promise<ScrapeOutcome> {
    const sources = await runSources(planSources(this.req), {
      runWide: RUN_WIDE, isFull: () => this.sink.full, signal: this.signal, run: (source, report) => this.runSource(source, report),
    });
    return { items: this.sink.items, sources, warnings: this.warnings, hitLimit: this.sink.full };
  }

  private filtered(report: SourceReportT, reason: string): void {
    report.filtered[reason] = (report.filtered[reason] ?? 0) + 1;
  }

  private emit(item: ForumItemT, report: SourceReportT): boolean {
    const outcome = this.sink.add(item);
    if (outcome === 'added') report.items++;
    else if (outcome === 'duplicate') this.filtered(report, 'duplicate');
    return outcome === 'added';
  }

  private async runSource(source: ForumSource, report: SourceReportT): Promise<void> {
    if (this.postDateLimit !== null && source.kind !== 'post' && !isTimeOrdered(source)) {
      this.warnings.push(`${source.label}: post_date_limit only filters with sort "${source.sort}"; every page up to the limits is still read (use sort "new" to stop early).`);
    }
    switch (source.kind) {
      case 'post': {
        const doc = await this.client.get(`/comments/${source.postId}`, { sort: commentSort(this.req.sort), limit: this.commentLimit() }, this.signal);
        if (!Array.isArray(doc) || doc.length < 2) throw badShape('expected [post listing, comment listing]');
        const post = asListing(doc[0]).children.find((c) => c.kind === 't3');
        if (!post) throw Errors.notFound('The post does not exist (or was removed).');
        await this.post(post.data, report, { tree: asListing(doc[1]) });
        return;
      }
      case 'community': {
        const about = asThing(await this.client.get(`/r/${source.name}/about`, {}, this.signal), 't5');
        if (about.over18 === true && !this.req.include_nsfw) {
          this.filtered(report, 'nsfw');
          return;
        }
        this.emit(mapCommunity(about, this.scrapedAt), report);
        await this.pages(`/r/${source.name}/${source.sort}`, { t: source.t ?? undefined }, source, report);
        return;
      }
      case 'user': {
        const about = asThing(await this.client.get(`/user/${source.name}/about`, {}, this.signal), 't2');
        if (about.is_suspended === true) throw Errors.userSuspended(source.name);
        if (asObj(about.subreddit)?.over_18 === true && !this.req.include_nsfw) this.filtered(report, 'nsfw');
        else this.emit(mapUser(about, this.scrapedAt), report);
        await this.pages(`/user/${source.name}/${source.section}`, { sort: source.sort, t: source.t ?? undefined }, source, report);
        return;
      }
      case 'search': {
        for (const type of source.types) {
          if (this.sink.full) return;
          const scoped = source.community !== null && type === 'link';
          await this.pages(scoped ? `/r/${source.community}/search` : '/search', {
            q: source.q, sort: source.sort, t: source.t ?? undefined, type, restrict_sr: scoped ? 'on' : undefined, include_over_18: this.req.include_nsfw ? 'on' : undefined,
          }, source, report);
        }
      }
    }
  }

  /** Pages a listing with `after` until it ends, repeats, the date limit passes or a limit is reached. */
  private async pages(path: string, params: Record<string, string | undefined>, source: ForumSource, report: SourceReportT): Promise<void> {
    const maxPosts = this.req.max_posts ?? Number.POSITIVE_INFINITY;
    const seenAfter = new Set<string>();
    let posts = 0;
    let after: string | undefined;
    for (;;) {
      const want = Math.min(this.sink.remaining, maxPosts - posts);
      if (want <= 0) return;
      const listing = asListing(await this.client.get(path, { ...params, limit: Math.min(PAGE_MAX, Math.max(want, 10)), after }, this.signal));
      for (const child of listing.children) {
        if (this.sink.full || posts >= maxPosts) return;
        const d = child.data;
        if (child.kind === 't3') {
          const outcome = await this.post(d, report, { timeOrdered: isTimeOrdered(source) });
          if (outcome === 'stop') return;
          if (outcome === 'emitted') posts++;
        } else if (child.kind === 't1') {
          this.listedComment(d, report);
        } else if (child.kind === 't5') {
          if (d.over18 === true && !this.req.include_nsfw) this.filtered(report, 'nsfw');
          else this.emit(mapCommunity(d, this.scrapedAt), report);
        } else if (child.kind === 't2') {
          if (asObj(d.subreddit)?.over_18 === true && !this.req.include_nsfw) this.filtered(report, 'nsfw');
          else this.emit(mapUser(d, this.scrapedAt), report);
        }
      }
      // The end is `after: null` (or a repeated cursor), never a short page.
      if (!listing.after || seenAfter.has(listing.after)) return;
      seenAfter.add(listing.after);
      after = listing.after;
    }
  }

  /** A comment from a user's comment listing (no tree around it). */
  private listedComment(d: Raw, report: SourceReportT): void {
    if (d.over_18 === true && !this.req.include_nsfw) return this.filtered(report, 'nsfw');
    if (this.commentDateLimit !== null && typeof d.created_utc === 'number' && d.created_utc < this.commentDateLimit) return this.filtered(report, 'comment_date_limit');
    this.emit(mapComment(d, this.scrapedAt), report);
  }

  private async post(d: Raw, report: SourceReportT, opts: { timeOrdered?: boolean; tree?: Listing }): Promise<'emitted' | 'skipped' | 'stop'> {
    if (d.over_18 === true && !this.req.include_nsfw) {
      this.filtered(report, 'nsfw');
      return 'skipped';
    }
    if (this.postDateLimit !== null && typeof d.created_utc === 'number' && d.created_utc < this.postDateLimit) {
      this.filtered(report, 'post_date_limit');
      // Newest-first pages only get older from here; pinned posts break the order, so they do not stop it.
      return opts.timeOrdered && d.stickied !== true ? 'stop' : 'skipped';
    }
    if (!this.emit(mapPost(d, this.scrapedAt), report)) return 'skipped';
    const known = typeof d.num_comments === 'number' ? d.num_comments : null;
    if (!this.req.skip_comments && this.req.max_comments !== 0 && !this.sink.full && (opts.tree || known !== 0)) {
      await this.comments(d, report, opts.tree);
    }
    return 'emitted';
  }

  private commentLimit(): number {
    return Math.min(500, this.req.max_comments ?? 500);
  }

  /**
   * A post's comment tree, flattened depth-first, with `more` stubs expanded largest first (PRAW's
   * order) until the budget (max_comments, the run's remaining items) or the request budget is spent.
   */
  private async comments(post: Raw, report: SourceReportT, tree?: Listing): Promise<void> {
    const id36 = String(post.id);
    const linkId = typeof post.name === 'string' ? post.name : `t3_${id36}`;
    const budget = Math.min(this.req.max_comments ?? Number.POSITIVE_INFINITY, this.sink.remaining);
    const sort = commentSort(this.req.sort);
    const context = { over18: typeof post.over_18 === 'boolean' ? post.over_18 : null, postTitle: typeof post.title === 'string' ? post.title : null };
    const kept: ForumCommentT[] = [];
    const seen = new Set<string>();
    const replies = new Map<string, number>();
    const stubs: Stub[] = [];

    const walk = (children: Thing[]) => {
      for (const child of children) {
        const d = child.data;
        if (child.kind === 't1') {
          const name = String(d.name ?? `t1_${String(d.id)}`);
          if (seen.has(name)) continue;
          seen.add(name);
          if (typeof d.parent_id === 'string') replies.set(d.parent_id, (replies.get(d.parent_id) ?? 0) + 1);
          if (this.commentDateLimit !== null && typeof d.created_utc === 'number' && d.created_utc < this.commentDateLimit) this.filtered(report, 'comment_date_limit');
          else kept.push(mapComment(d, this.scrapedAt, context));
          const nested = asObj(d.replies);
          if (nested) walk(asListing(nested).children);
        } else if (child.kind === 'more') {
          const ids = Array.isArray(d.children) ? d.children.map(String) : [];
          const parentId = String(d.parent_id ?? linkId);
          // "continue this thread": id "_" and no children; the rest of the branch is under its parent's own thread.
          if (ids.length === 0) stubs.push({ kind: 'continue', parentId, children: [], count: typeof d.count === 'number' ? d.count : 0 });
          else stubs.push({ kind: 'load', parentId, children: ids.filter((x) => !seen.has(`t1_${x}`)), count: typeof d.count === 'number' ? d.count : ids.length });
        }
      }
    };

    if (!tree) {
      const doc = await this.client.get(`/comments/${id36}`, { sort, limit: this.commentLimit() }, this.signal);
      if (!Array.isArray(doc) || doc.length < 2) throw badShape('expected [post listing, comment listing]');
      tree = asListing(doc[1]);
    }
    walk(tree.children);
    let requests = 0;
    while (kept.length < budget && stubs.length > 0 && requests < this.maxMoreRequests) {
      stubs.sort((a, b) => b.count - a.count);
      const stub = stubs.shift()!;
      requests++;
      if (stub.kind === 'load') {
        const chunk = stub.children.slice(0, MORE_CHUNK);
        if (stub.children.length > MORE_CHUNK) stubs.push({ ...stub, children: stub.children.slice(MORE_CHUNK), count: Math.max(0, stub.count - MORE_CHUNK) });
        if (chunk.length === 0) continue;
        const doc = asObj(asObj(await this.client.moreChildren(linkId, chunk, sort, this.signal))?.json);
        const errors = doc?.errors;
        if (Array.isArray(errors) && errors.length) throw Errors.upstreamError(`Reddit refused /api/morechildren: ${JSON.stringify(errors[0])}.`);
        const things = asObj(doc?.data)?.things;
        if (!Array.isArray(things)) throw badShape('morechildren without data.things');
        walk(things.filter((t): t is Thing => !!asObj(t) && !!asObj((t as Thing).data)));
      } else {
        const doc = await this.client.get(`/comments/${id36}/_/${stub.parentId.replace(/^t1_/, '')}`, { sort, limit: this.commentLimit() }, this.signal);
        if (!Array.isArray(doc) || doc.length < 2) throw badShape('expected [post listing, comment listing]');
        walk(asListing(doc[1]).children);
      }
    }
    if (stubs.length > 0 && kept.length < budget) {
      this.warnings.push(`${linkId}: ${stubs.length} "more comments" branches were not expanded (at most ${this.maxMoreRequests} expansion requests per post).`);
    }
    for (const c of kept.slice(0, budget)) {
      c.numberOfReplies = replies.get(c.id) ?? 0;
      if (!this.emit(c, report) && this.sink.full) break;
    }
  }
}
