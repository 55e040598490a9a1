import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { SHARED } from './shared.js';

/** The Reddit replay payloads (real upstream formats). */
export const REDDIT_FIXTURES = join(SHARED, 'fixtures/scrapers/reddit');
export const fixture = (name: string): any => JSON.parse(readFileSync(join(REDDIT_FIXTURES, name), 'utf8'));
const fixtureText = (name: string) => readFileSync(join(REDDIT_FIXTURES, name), 'utf8');
export const HEADERS = fixture('response_headers.json') as Record<
  'ok' | 'exhausted_429' | 'blocked_403',
  Record<string, string>
>;
export const CLIENT_ID = 'fake-client-id';
export const CLIENT_SECRET = 'fake-client-secret';

export interface SeenRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}
export type Fault =
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'blocked' }
  | { kind: 'hang' };

/** Every post that appears in a fixture, for deriving `/comments/<id>` documents of posts without one. */
function knownPosts(): Map<string, any> {
  const posts = new Map<string, any>();
  for (const f of [
    'r_typescript_new_page1.json',
    'r_typescript_new_page2.json',
    'search_link.json',
    'user_ts_dev_42_submitted.json',
  ]) {
    for (const c of fixture(f).data.children) posts.set(c.data.id, c.data);
  }
  return posts;
}

/** The comments of the fixture thread as a user's comment listing (t1 things carrying link_title), derived. */
function userCommentsListing(): any {
  const thread = fixture('comments_1q2w3e4.json');
  const post = thread[0].data.children[0].data;
  const out: any[] = [];
  const walk = (children: any[]) => {
    for (const c of children) {
      if (c.kind !== 't1') continue;
      const { replies, ...data } = c.data;
      out.push({
        kind: 't1',
        data: {
          ...data,
          replies: '',
          link_title: post.title,
          link_permalink: `https://www.reddit.com${post.permalink}`,
          over_18: post.over_18,
        },
      });
      if (replies && typeof replies === 'object') walk(replies.data.children);
    }
  };
  walk(thread[1].data.children);
  return {
    kind: 'Listing',
    data: { after: null, dist: out.length, modhash: '', geo_filter: null, children: out, before: null },
  };
}

const listing = (children: any[], after: string | null = null) => ({
  kind: 'Listing',
  data: { after, dist: children.length, modhash: '', geo_filter: null, children, before: null },
});

/** The shape of a synthetic long thread (see FakeReddit.longThread). */
export interface LongThreadShape {
  /** Top-level comments, each the head of a reply chain. */
  topLevel: number;
  /** Replies in each chain (depth 1 … chain). */
  chain: number;
  /** Top-level comments in the first answer; the rest are behind one "load more comments" stub. */
  shownTopLevel: number;
  /** Deepest depth in a tree answer; deeper replies are behind a "continue this thread" stub. */
  shownDepth: number;
}

interface ThreadComment {
  data: any;
  children: string[];
}

/**
 * A long thread in Reddit's formats, derived from the fixture's post and comment records: what
 * /comments/<id> answers (a depth-capped tree, a "load more comments" stub listing every id behind it,
 * "continue this thread" stubs), what /comments/<id>/_/<comment> answers (that comment at depth 0 with its
 * branch) and what /api/morechildren answers (the asked ids, flat, pre-order).
 */
class LongThread {
  readonly comments = new Map<string, ThreadComment>();
  readonly order: string[] = [];
  readonly topLevel: string[] = [];
  readonly post: any;

  constructor(
    readonly postId: string,
    readonly shape: LongThreadShape,
  ) {
    const thread = fixture('comments_1q2w3e4.json');
    const base = thread[1].data.children[0].data;
    const total = shape.topLevel * (1 + shape.chain);
    this.post = {
      ...thread[0].data.children[0].data,
      id: postId,
      name: `t3_${postId}`,
      num_comments: total,
      permalink: `/r/typescript/comments/${postId}/long_thread/`,
    };
    let n = 0;
    const add = (id: string, parent: string, depth: number) => {
      this.order.push(id);
      this.comments.set(id, {
        children: [],
        data: {
          ...base,
          id,
          name: `t1_${id}`,
          parent_id: parent,
          link_id: `t3_${postId}`,
          depth,
          body: `Comment ${id}.`,
          created_utc: base.created_utc + n++,
          permalink: `${this.post.permalink}${id}/`,
          replies: '',
        },
      });
      if (parent.startsWith('t1_')) this.comments.get(parent.slice(3))!.children.push(id);
    };
    for (let i = 0; i < shape.topLevel; i++) {
      const top = `${postId}c${i.toString(36)}`;
      this.topLevel.push(top);
      add(top, `t3_${postId}`, 0);
      let parent = top;
      for (let j = 1; j <= shape.chain; j++) {
        const id = `${top}r${j}`;
        add(id, `t1_${parent}`, j);
        parent = id;
      }
    }
  }

  /** Every comment id under (and including) `id`, pre-order. */
  private branch(id: string): string[] {
    return [id, ...this.comments.get(id)!.children.flatMap((c) => this.branch(c))];
  }

  /** A comment with its replies down to `maxDepth` (relative depth from `base`), then a continue stub. */
  private node(id: string, depth: number, maxDepth: number): any {
    const c = this.comments.get(id)!;
    let replies: any = '';
    if (c.children.length && depth < maxDepth)
      replies = listing(c.children.map((k) => this.node(k, depth + 1, maxDepth)));
    else if (c.children.length)
      replies = listing([
        {
          kind: 'more',
          data: { count: 0, name: 't1__', id: '_', parent_id: `t1_${id}`, depth: depth + 1, children: [] },
        },
      ]);
    return { kind: 't1', data: { ...c.data, depth, replies } };
  }

  tree(): any {
    const shown = this.topLevel.slice(0, this.shape.shownTopLevel);
    const hidden = this.topLevel.slice(this.shape.shownTopLevel);
    const children = shown.map((id) => this.node(id, 0, this.shape.shownDepth));
    if (hidden.length) {
      const ids = hidden.flatMap((id) => this.branch(id));
      children.push({
        kind: 'more',
        data: {
          count: ids.length,
          name: `t1_${ids[0]}`,
          id: ids[0],
          parent_id: `t3_${this.postId}`,
          depth: 0,
          children: ids,
        },
      });
    }
    return [listing([{ kind: 't3', data: { ...this.post, num_duplicates: 0 } }]), listing(children)];
  }

  continued(id: string): any {
    if (!this.comments.has(id)) return undefined;
    return [listing([{ kind: 't3', data: this.post }]), listing([this.node(id, 0, Number.POSITIVE_INFINITY)])];
  }

  more(ids: string[]): any {
    if (ids.length > 100)
      return { json: { errors: [['TOO_MANY_CHILDREN', 'at most 100 children', 'children']], data: {} } };
    const things = ids
      .filter((id) => this.comments.has(id))
      .map((id) => ({ kind: 't1', data: this.comments.get(id)!.data }));
    return { json: { errors: [], data: { things } } };
  }
}

/**
 * A local fake of oauth.reddit.com + the token endpoint, replaying the fixture payloads and recording
 * what it receives, so tests can check OAuth, raw_json, paging cursors, sorts and morechildren ids.
 */
export class FakeReddit {
  readonly requests: SeenRequest[] = [];
  tokenVersion = 0;
  tokenRequests = 0;
  moreInFlight = 0;
  maxMoreInFlight = 0;
  /** Rewrites a JSON document before it is served (derive variants such as NSFW posts). */
  transform: (path: string, query: URLSearchParams, doc: any) => any = (_p, _q, d) => d;
  /** Extra per-response delay (bench: emulate network latency). */
  latencyMs = 0;
  private readonly faults: { match: RegExp; fault: Fault; times: number }[] = [];
  private readonly posts = knownPosts();
  private readonly threads = new Map<string, LongThread>();
  private server!: Server;
  url = '';

  static async start(): Promise<FakeReddit> {
    const f = new FakeReddit();
    f.server = createServer((req, res) => {
      f.handle(req, res).catch((e) => {
        res.statusCode = 500;
        res.end(String(e));
      });
    });
    await new Promise<void>((r) => f.server.listen(0, '127.0.0.1', r));
    f.url = `http://127.0.0.1:${(f.server.address() as AddressInfo).port}`;
    return f;
  }

  get token(): string {
    const base = fixture('oauth_token.json').access_token as string;
    return this.tokenVersion === 0 ? base : `${base}-v${this.tokenVersion}`;
  }

  /** The next `times` requests whose path matches fail this way. */
  fault(match: RegExp, fault: Fault, times = 1): void {
    this.faults.push({ match, fault, times });
  }

  /** Serves a long thread under post `postId`; returns every comment fullname in thread order. */
  longThread(postId: string, shape: LongThreadShape): string[] {
    const thread = new LongThread(postId, shape);
    this.threads.set(postId, thread);
    return thread.order.map((id) => `t1_${id}`);
  }

  /** The current token stops working (as when it expires); the next token request gets a new one. */
  expireToken(): void {
    this.tokenVersion++;
  }

  apiRequests(): SeenRequest[] {
    return this.requests.filter((r) => r.path !== '/api/v1/access_token');
  }

  /** Config for [scrapers.forum] pointing at this server. */
  toml(extra = ''): string {
    return [
      '[scrapers.forum]',
      `client_id = "${CLIENT_ID}"`,
      `client_secret = "${CLIENT_SECRET}"`,
      `api_base_url = "${this.url}"`,
      `token_url = "${this.url}/api/v1/access_token"`,
      'requests_per_minute = 60000',
      'burst = 1000',
      'retry_backoff_ms = 10',
      extra,
    ].join('\n');
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url!, 'http://x');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const seen: SeenRequest = {
      method: req.method!,
      path: u.pathname,
      query: u.searchParams,
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    };
    this.requests.push(seen);
    if (this.latencyMs) await new Promise((r) => setTimeout(r, this.latencyMs));

    if (u.pathname === '/api/v1/access_token') {
      this.tokenRequests++;
      const expected = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`;
      if (
        req.method !== 'POST' ||
        req.headers.authorization !== expected ||
        seen.body !== 'grant_type=client_credentials'
      ) {
        return this.json(res, 401, { message: 'Unauthorized', error: 401 });
      }
      return this.json(res, 200, { ...fixture('oauth_token.json'), access_token: this.token });
    }
    if (req.headers.authorization !== `bearer ${this.token}`)
      return this.json(res, 401, { message: 'Unauthorized', error: 401 });
    if (u.searchParams.get('raw_json') !== '1')
      return this.json(res, 400, { message: 'raw_json=1 expected by this fake', error: 400 });

    const fault = this.faults.find((f) => f.times > 0 && f.match.test(u.pathname));
    if (fault) {
      fault.times--;
      const f = fault.fault;
      if (f.kind === 'hang') return; // never answers: the client's timeout must fire
      if (f.kind === 'blocked') {
        res.writeHead(403, HEADERS.blocked_403);
        res.end(fixtureText('blocked_403.html'));
        return;
      }
      return this.json(res, f.status, f.body ?? { message: 'error', error: f.status }, f.headers);
    }

    if (u.pathname === '/api/morechildren') {
      this.moreInFlight++;
      this.maxMoreInFlight = Math.max(this.maxMoreInFlight, this.moreInFlight);
      await new Promise((r) => setTimeout(r, 20));
      this.moreInFlight--;
      const long = this.threads.get((u.searchParams.get('link_id') ?? '').replace(/^t3_/, ''));
      if (long) return this.serve(res, u, long.more((u.searchParams.get('children') ?? '').split(',')));
      const doc = fixture('morechildren.json');
      const wanted = new Set((u.searchParams.get('children') ?? '').split(','));
      doc.json.data.things = doc.json.data.things.filter((t: any) => wanted.has(t.data.id));
      if (u.searchParams.get('link_id') !== 't3_1q2w3e4') doc.json.data.things = [];
      return this.serve(res, u, doc);
    }
    const doc = this.route(u);
    if (doc === undefined) return this.json(res, 404, fixture('error_notfound.json'));
    if (doc && doc.__status) return this.json(res, doc.__status, doc.body);
    return this.serve(res, u, doc);
  }

  private route(u: URL): any {
    const p = u.pathname.replace(/\/$/, '');
    const q = u.searchParams;
    let m: RegExpExecArray | null;
    if (p === '/r/typescript/about') return fixture('r_typescript_about.json');
    if (p === '/r/private_sub/about' || p.startsWith('/r/private_sub/'))
      return { __status: 403, body: fixture('error_private.json') };
    if (p === '/r/banned_sub/about' || p.startsWith('/r/banned_sub/'))
      return { __status: 404, body: fixture('error_banned.json') };
    // r/all, r/popular and multi-community listings that include typescript answer with its pages (derived);
    // r/all and r/popular have no about page (404), as on Reddit.
    if (
      (m = /^\/r\/([A-Za-z0-9_+]+)\/(new|hot|top|rising|controversial)$/.exec(p)) &&
      ['typescript', 'all', 'popular'].some((n) => m![1]!.split('+').includes(n))
    ) {
      return q.get('after') === 't3_1q2w3e5'
        ? fixture('r_typescript_new_page2.json')
        : fixture('r_typescript_new_page1.json');
    }
    if (p === '/search' || p === '/r/typescript/search') {
      const type = q.get('type') ?? 'link';
      if (type === 'sr') return fixture('search_sr.json');
      if (type === 'user') return fixture('search_user.json');
      // Page 2 of the post search, derived from the listing's second page.
      if (q.get('after') === 't3_1q2w3e4') return listing(fixture('r_typescript_new_page2.json').data.children, null);
      return fixture('search_link.json');
    }
    if (p === '/user/ts_dev_42/about') return fixture('user_ts_dev_42_about.json');
    if (p === '/user/ts_dev_42/submitted') return fixture('user_ts_dev_42_submitted.json');
    if (p === '/user/ts_dev_42/comments') return userCommentsListing();
    if ((m = /^\/comments\/([a-z0-9]+)(?:\/_\/([a-z0-9]+))?$/.exec(p)) && this.threads.has(m[1]!)) {
      const thread = this.threads.get(m[1]!)!;
      return m[2] ? thread.continued(m[2]) : thread.tree();
    }
    if (p === '/comments/1q2w3e4/_/kq2b') return fixture('comments_1q2w3e4_continue_kq2b.json');
    if (p === '/comments/1q2w3e4') return fixture('comments_1q2w3e4.json');
    if ((m = /^\/comments\/([a-z0-9]+)$/.exec(p)) && this.posts.has(m[1]!)) {
      // Derived: the post as the first listing, and an empty comment listing.
      return [listing([{ kind: 't3', data: { ...this.posts.get(m[1]!), num_duplicates: 0 } }]), listing([])];
    }
    return undefined;
  }

  private serve(res: ServerResponse, u: URL, doc: any): void {
    this.json(res, 200, this.transform(u.pathname, u.searchParams, doc));
  }

  private json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { ...HEADERS.ok, ...headers });
    res.end(JSON.stringify(body));
  }
}
