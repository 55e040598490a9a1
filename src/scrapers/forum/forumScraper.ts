import { Errors, isApiError, type ApiError } from '../../contract/errors.js';
import type { ScrapeOutcome, SourceReportT, StopReason } from '../scrapeResult.js';
import { addFiltered, addProblem, ItemSink, runSources, type Offer, type SourceWork } from '../sourceScheduler.js';
import type { RequestScope } from '../tokenBucket.js';
import {
  ForumItem,
  forumItemKey,
  mapComment,
  mapCommunity,
  mapPost,
  mapUser,
  type Draft,
  type ForumCommentT,
  type ForumItemT,
} from './items.js';
import type { RedditClient } from './redditClient.js';
import type { ForumScrapeRequestT } from './request.js';
import {
  commentSort,
  communitiesOf,
  isTimeOrdered,
  planSources,
  PSEUDO_COMMUNITIES,
  type ForumSource,
} from './sources.js';

type Raw = Record<string, unknown>;
interface Thing {
  kind: string;
  data: Raw;
}
interface Listing {
  after: string | null;
  children: Thing[];
}
type Candidate = Draft<ForumItemT>;
/** A generator of candidate items inside a source (posts, comments), returning `R` when done. */
type Work<R> = AsyncGenerator<Candidate, R, Offer | undefined>;

const PAGE_MAX = 100;
const MORE_CHUNK = 100;
/** Problems that concern the credential, not the source: every later source would fail the same way. */
const RUN_WIDE = new Set(['upstream_blocked', 'upstream_auth_failed', 'scraper_not_configured']);
/** About-page answers that mean the community itself cannot be read: its listing would fail the same way. */
const COMMUNITY_REFUSED = new Set(['community_private', 'community_banned', 'community_quarantined']);

const asObj = (v: unknown): Raw | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Raw) : null);

/** The parts of a scraper run the forum scraper needs (the worker passes its RunContext). */
export interface ForumRunOptions {
  signal?: AbortSignal | undefined;
  onWait?: ((resumeAt: Date | null) => void) | undefined;
  seen?: ReadonlySet<string> | undefined;
  saveSample?: ((what: string, body: string) => string | null) | undefined;
  maxMoreRequests?: number | undefined;
}

interface Stub {
  kind: 'load' | 'continue';
  parentId: string;
  children: string[];
  count: number;
}

/**
 * The forum (Reddit) scraper: plans sources from the request, pages listings with `after`, expands
 * comment trees (`more` stubs through /api/morechildren, "continue this thread" through the
 * comment's own thread) and reports every source. A failed request costs only what it was for: a
 * post's comments that cannot be read become a problem on the source and the post is still delivered,
 * a failed expansion keeps the comments read before it, a missing about page keeps the listing.
 */
export class ForumScraper {
  private readonly scrapedAt = new Date().toISOString();
  private readonly sink: ItemSink;
  private readonly postDateLimit: number | null;
  private readonly commentDateLimit: number | null;
  private readonly warnings: string[] = [];
  private readonly scope: RequestScope;
  private readonly maxMoreRequests: number;

  constructor(
    private readonly client: RedditClient,
    private readonly req: ForumScrapeRequestT,
    private readonly limit: number,
    private readonly o: ForumRunOptions = {},
  ) {
    this.sink = new ItemSink(Math.min(limit, req.max_items), forumItemKey, ForumItem, o.seen);
    this.postDateLimit = req.post_date_limit ? Date.parse(req.post_date_limit) / 1000 : null;
    this.commentDateLimit = req.comment_date_limit ? Date.parse(req.comment_date_limit) / 1000 : null;
    this.scope = { signal: o.signal, onWait: o.onWait };
    this.maxMoreRequests = o.maxMoreRequests ?? 32;
  }

  async run(): Promise<ScrapeOutcome> {
    const { reports, cancelled } = await runSources(planSources(this.req), {
      sink: this.sink,
      runWide: RUN_WIDE,
      signal: this.o.signal,
      limitReason: this.limit < this.req.max_items ? 'quota' : 'max_items',
      open: (source, report) => this.source(source, report),
    });
    return { items: this.sink.items, sources: reports, warnings: this.warnings, hitLimit: this.sink.full, cancelled };
  }

  /** A document that is not what Reddit serves there: upstream_error, with a copy kept for diagnosis. */
  private unexpected(what: string, doc: unknown): ApiError {
    const sample = this.o.saveSample?.(`reddit ${what}`, JSON.stringify(doc) ?? String(doc)) ?? null;
    return Errors.upstreamError(`Reddit answered with an unexpected document (${what}).`, sample ? { sample } : {});
  }

  private listing(v: unknown): Listing {
    const o = asObj(v);
    const data = asObj(o?.data);
    if (o?.kind !== 'Listing' || !data || !Array.isArray(data.children)) throw this.unexpected('expected a Listing', v);
    return {
      after: typeof data.after === 'string' ? data.after : null,
      children: data.children.filter(
        (c): c is Thing => !!asObj(c) && typeof (c as Thing).kind === 'string' && !!asObj((c as Thing).data),
      ),
    };
  }

  private thing(v: unknown, kind: string): Raw {
    const o = asObj(v);
    if (o?.kind !== kind || !asObj(o.data)) throw this.unexpected(`expected a ${kind}`, v);
    return o.data as Raw;
  }

  private thread(doc: unknown): [Listing, Listing] {
    if (!Array.isArray(doc) || doc.length < 2) throw this.unexpected('expected [post listing, comment listing]', doc);
    return [this.listing(doc[0]), this.listing(doc[1])];
  }

  /** A failure this source survives (recorded as a problem): not a cancellation, not a run-wide block. */
  private survivable(e: unknown): e is ApiError {
    return !this.o.signal?.aborted && isApiError(e) && !RUN_WIDE.has(e.code);
  }

  private async *source(source: ForumSource, report: SourceReportT): SourceWork {
    if (this.postDateLimit !== null && source.kind !== 'post' && !isTimeOrdered(source)) {
      this.warnings.push(
        `${source.label}: post_date_limit only filters with sort "${source.sort}"; every page up to the limits is still read (use sort "new" to stop early).`,
      );
    }
    switch (source.kind) {
      case 'post': {
        const [posts, tree] = this.thread(
          await this.client.get(
            `/comments/${source.postId}`,
            { sort: commentSort(this.req.sort), limit: this.commentLimit() },
            this.scope,
          ),
        );
        const post = posts.children.find((c) => c.kind === 't3');
        if (!post) throw Errors.notFound('The post does not exist (or was removed).');
        yield* this.post(post.data, report, { tree, thread: true });
        return 'exhausted';
      }
      case 'community': {
        if (!(yield* this.communityInfo(source.name, report))) return 'exhausted';
        return yield* this.pages(`/r/${source.name}/${source.sort}`, { t: source.t ?? undefined }, source, report);
      }
      case 'user': {
        const about = this.thing(await this.client.get(`/user/${source.name}/about`, {}, this.scope), 't2');
        if (about.is_suspended === true) throw Errors.userSuspended(source.name);
        if (asObj(about.subreddit)?.over_18 === true && !this.req.include_nsfw) addFiltered(report, 'nsfw');
        else yield mapUser(about, this.scrapedAt);
        return yield* this.pages(
          `/user/${source.name}/${source.section}`,
          { sort: source.sort, t: source.t ?? undefined },
          source,
          report,
        );
      }
      case 'search': {
        let reason: StopReason = 'exhausted';
        for (const type of source.types) {
          const scoped = source.community !== null && type === 'link';
          reason = yield* this.pages(
            scoped ? `/r/${source.community}/search` : '/search',
            {
              q: source.q,
              sort: source.sort,
              t: source.t ?? undefined,
              type,
              restrict_sr: scoped ? 'on' : undefined,
              include_over_18: this.req.include_nsfw ? 'on' : undefined,
            },
            source,
            report,
          );
        }
        return reason;
      }
    }
  }

  /**
   * The community item(s) of a listing from their about pages. r/all and r/popular have none. A single
   * community that is private, banned or quarantined fails its source (the listing would too); any other
   * failure to read an about page is a problem, and the listing is still scraped. False: skip the
   * listing (a single NSFW community without include_nsfw).
   */
  private async *communityInfo(name: string, report: SourceReportT): Work<boolean> {
    const names = communitiesOf(name);
    for (const one of names) {
      if (PSEUDO_COMMUNITIES.has(one.toLowerCase())) continue;
      let about: Raw;
      try {
        about = this.thing(await this.client.get(`/r/${one}/about`, {}, this.scope), 't5');
      } catch (e) {
        if (!this.survivable(e) || (names.length === 1 && COMMUNITY_REFUSED.has(e.code))) throw e;
        addProblem(report, Errors.communityInfoUnavailable(one, e));
        continue;
      }
      if (about.over18 === true && !this.req.include_nsfw) {
        addFiltered(report, 'nsfw');
        // A single NSFW community is skipped whole; in a multi-community listing only its info item is.
        if (names.length === 1) return false;
        continue;
      }
      yield mapCommunity(about, this.scrapedAt);
    }
    return true;
  }

  /** Pages a listing with `after` until it ends, repeats, the date limit passes or max_posts is reached. */
  private async *pages(
    path: string,
    params: Record<string, string | undefined>,
    source: ForumSource,
    report: SourceReportT,
  ): Work<StopReason> {
    const maxPosts = this.req.max_posts ?? Number.POSITIVE_INFINITY;
    const seenAfter = new Set<string>();
    let posts = 0;
    let after: string | undefined;
    for (;;) {
      const want = Math.min(this.sink.remaining, maxPosts - posts);
      if (posts >= maxPosts) return 'max_posts';
      const listing = this.listing(
        await this.client.get(path, { ...params, limit: Math.min(PAGE_MAX, Math.max(want, 10)), after }, this.scope),
      );
      for (const child of listing.children) {
        if (posts >= maxPosts) return 'max_posts';
        const d = child.data;
        if (child.kind === 't3') {
          const outcome = yield* this.post(d, report, { timeOrdered: isTimeOrdered(source) });
          if (outcome === 'stop') return 'date_limit';
          if (outcome === 'emitted') posts++;
        } else if (child.kind === 't1') {
          yield* this.listedComment(d, report);
        } else if (child.kind === 't5') {
          if (d.over18 === true && !this.req.include_nsfw) addFiltered(report, 'nsfw');
          else yield mapCommunity(d, this.scrapedAt);
        } else if (child.kind === 't2') {
          if (asObj(d.subreddit)?.over_18 === true && !this.req.include_nsfw) addFiltered(report, 'nsfw');
          else yield mapUser(d, this.scrapedAt);
        }
      }
      // The end is `after: null` (or a repeated cursor), never a short page.
      if (!listing.after || seenAfter.has(listing.after)) return 'exhausted';
      seenAfter.add(listing.after);
      after = listing.after;
    }
  }

  /** A comment from a user's comment listing (no tree around it). */
  private async *listedComment(d: Raw, report: SourceReportT): Work<void> {
    if (d.over_18 === true && !this.req.include_nsfw) return addFiltered(report, 'nsfw');
    if (this.commentDateLimit !== null && typeof d.created_utc === 'number' && d.created_utc < this.commentDateLimit)
      return addFiltered(report, 'comment_date_limit');
    yield mapComment(d, this.scrapedAt);
  }

  /**
   * A post, then (once it was added) its comments. `thread`: the source is the post itself, so its
   * thread is read even when the post was delivered before (only_new then delivers new comments only).
   */
  private async *post(
    d: Raw,
    report: SourceReportT,
    opts: { timeOrdered?: boolean; tree?: Listing; thread?: boolean },
  ): Work<'emitted' | 'skipped' | 'stop'> {
    if (d.over_18 === true && !this.req.include_nsfw) {
      addFiltered(report, 'nsfw');
      return 'skipped';
    }
    if (this.postDateLimit !== null && typeof d.created_utc === 'number' && d.created_utc < this.postDateLimit) {
      addFiltered(report, 'post_date_limit');
      // Newest-first pages only get older from here; pinned posts break the order, so they do not stop it.
      return opts.timeOrdered && d.stickied !== true ? 'stop' : 'skipped';
    }
    const outcome = yield mapPost(d, this.scrapedAt);
    if (outcome !== 'added' && !(opts.thread && outcome === 'seen')) return 'skipped';
    const known = typeof d.num_comments === 'number' ? d.num_comments : null;
    if (!this.req.skip_comments && this.req.max_comments !== 0 && (opts.tree || known !== 0)) {
      yield* this.comments(d, report, opts.tree);
    }
    return outcome === 'added' ? 'emitted' : 'skipped';
  }

  private commentLimit(): number {
    return Math.min(500, this.req.max_comments ?? 500);
  }

  /**
   * A post's comment tree, flattened depth-first, with `more` stubs expanded largest first (PRAW's
   * order) until the budget (max_comments, the run's remaining items) or the request budget is spent.
   * The budget counts comments this run can deliver: comments the workspace was delivered before
   * (only_new) are passed over and the expansion goes on, so a long thread is delivered a budget at a
   * time by successive runs; ids of a "load more" stub that were delivered before are not asked for
   * again. numberOfReplies counts the direct replies read (also those behind "continue this thread")
   * plus the counts Reddit declares in stubs left unexpanded, so a cut tree does not under-count.
   */
  private async *comments(post: Raw, report: SourceReportT, tree?: Listing): Work<void> {
    const id36 = String(post.id);
    const linkId = typeof post.name === 'string' ? post.name : `t3_${id36}`;
    const budget = Math.min(this.req.max_comments ?? Number.POSITIVE_INFINITY, this.sink.remaining);
    const sort = commentSort(this.req.sort);
    const context = {
      over18: typeof post.over_18 === 'boolean' ? post.over_18 : null,
      postTitle: typeof post.title === 'string' ? post.title : null,
    };
    const kept: Draft<ForumCommentT>[] = [];
    /** Kept comments this run can still deliver (not delivered before, not already taken). */
    let fresh = 0;
    const seen = new Set<string>();
    const replies = new Map<string, Set<string>>();
    const declared = new Map<string, number>();
    const stubs: Stub[] = [];
    const commentKey = (fullname: string) => forumItemKey({ dataType: 'comment', id: fullname });

    const walk = (children: Thing[]) => {
      for (const child of children) {
        const d = child.data;
        if (child.kind === 't1') {
          const name = typeof d.name === 'string' ? d.name : `t1_${String(d.id)}`;
          // A comment read before in this run comes back as the head of its own "continue this thread"
          // document: only its replies there are new.
          if (!seen.has(name)) {
            seen.add(name);
            if (typeof d.parent_id === 'string') {
              const set = replies.get(d.parent_id) ?? new Set<string>();
              set.add(name);
              replies.set(d.parent_id, set);
            }
            if (
              this.commentDateLimit !== null &&
              typeof d.created_utc === 'number' &&
              d.created_utc < this.commentDateLimit
            )
              addFiltered(report, 'comment_date_limit');
            else {
              const c = mapComment(d, this.scrapedAt, context);
              kept.push(c);
              if (c.id && this.sink.wouldAdd(commentKey(c.id))) fresh++;
            }
          }
          const nested = asObj(d.replies);
          if (nested) walk(this.listing(nested).children);
        } else if (child.kind === 'more') {
          const ids = Array.isArray(d.children) ? d.children.map(String) : [];
          const parentId = String(d.parent_id ?? linkId);
          // "continue this thread": id "_" and no children; the rest of the branch is under its parent's own thread.
          if (ids.length === 0)
            stubs.push({ kind: 'continue', parentId, children: [], count: typeof d.count === 'number' ? d.count : 0 });
          else
            stubs.push({
              kind: 'load',
              parentId,
              children: ids.filter((x) => !seen.has(`t1_${x}`)),
              count: typeof d.count === 'number' ? d.count : ids.length,
            });
        }
      }
    };

    if (!tree) {
      try {
        tree = this.thread(
          await this.client.get(`/comments/${id36}`, { sort, limit: this.commentLimit() }, this.scope),
        )[1];
      } catch (e) {
        if (!this.survivable(e)) throw e;
        addProblem(report, Errors.commentsUnavailable(linkId, e));
        return;
      }
    }
    walk(tree.children);
    let requests = 0;
    while (fresh < budget && stubs.length > 0 && requests < this.maxMoreRequests) {
      stubs.sort((a, b) => b.count - a.count);
      const stub = stubs.shift()!;
      let chunk: string[] = [];
      if (stub.kind === 'load') {
        // Stubs list every id of their branch: ids delivered before are passed over without a request (they
        // still count as declared replies, as Reddit gave them but they were not read).
        const known = stub.children.filter((x) => this.sink.deliveredBefore(commentKey(`t1_${x}`)));
        for (let i = 0; i < known.length; i++) addFiltered(report, 'seen');
        if (known.length) declared.set(stub.parentId, (declared.get(stub.parentId) ?? 0) + known.length);
        const unseen = known.length
          ? stub.children.filter((x) => !this.sink.deliveredBefore(commentKey(`t1_${x}`)))
          : stub.children;
        chunk = unseen.slice(0, MORE_CHUNK);
        if (chunk.length === 0) continue;
        stub.children = unseen;
        stub.count = Math.max(0, stub.count - known.length);
      }
      requests++;
      try {
        if (stub.kind === 'load') {
          const raw = await this.client.moreChildren(linkId, chunk, sort, this.scope);
          const doc = asObj(asObj(raw)?.json);
          const errors = doc?.errors;
          if (Array.isArray(errors) && errors.length)
            throw Errors.upstreamError(`Reddit refused /api/morechildren: ${JSON.stringify(errors[0])}.`);
          const things = asObj(doc?.data)?.things;
          if (!Array.isArray(things)) throw this.unexpected('morechildren without data.things', raw);
          walk(things.filter((t): t is Thing => !!asObj(t) && !!asObj((t as Thing).data)));
          if (stub.children.length > MORE_CHUNK)
            stubs.push({
              ...stub,
              children: stub.children.slice(MORE_CHUNK),
              count: Math.max(0, stub.count - MORE_CHUNK),
            });
        } else {
          walk(
            this.thread(
              await this.client.get(
                `/comments/${id36}/_/${stub.parentId.replace(/^t1_/, '')}`,
                { sort, limit: this.commentLimit() },
                this.scope,
              ),
            )[1].children,
          );
        }
      } catch (e) {
        if (!this.survivable(e)) throw e;
        // The branch is lost, not the comments already read; its declared count still counts as replies.
        stubs.push(stub);
        addProblem(report, Errors.commentsIncomplete(linkId, stubs.length, e));
        break;
      }
    }
    if (stubs.length > 0 && fresh < budget && requests >= this.maxMoreRequests) {
      this.warnings.push(
        `${linkId}: ${stubs.length} "more comments" branches were not expanded (at most ${this.maxMoreRequests} expansion requests per post).`,
      );
    }
    for (const s of stubs) if (s.kind === 'load') declared.set(s.parentId, (declared.get(s.parentId) ?? 0) + s.count);
    let delivered = 0;
    for (const c of kept) {
      if (delivered >= budget) break;
      if (c.id) c.numberOfReplies = (replies.get(c.id)?.size ?? 0) + (declared.get(c.id) ?? 0);
      if ((yield c) === 'added') delivered++;
    }
  }
}
