import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { SHARED } from './shared.js';

/** The Google Maps replay payloads (real upstream formats). */
export const GMAPS_FIXTURES = join(SHARED, 'fixtures/scrapers/gmaps');
export const gmapsText = (name: string): string => readFileSync(join(GMAPS_FIXTURES, name), 'utf8');
/** A `)]}'` payload as JSON. */
export const gmapsJson = (name: string): any => JSON.parse(gmapsText(name).replace(/^\)\]\}'\n/, ''));
const xssi = (doc: unknown) => `)]}'\n${JSON.stringify(doc)}`;
const clone = <T>(v: T): T => structuredClone(v);

/** The query of the real search payload; it answers with the two real places. */
export const REAL_QUERY = 'coffee near mission sf';
export const BLUE_FERN = {
  fid: '0x808f7e2f4a7b0c1d:0x1a2b3c4d5e6f7081',
  cid: '1885667171979194497',
  placeId: 'ChIJFAKEplaceId0000000001',
};
export const SOURDOUGH = { fid: '0x808f7e3a1b2c3d4e:0x0f1e2d3c4b5a6978', placeId: 'ChIJFAKEplaceId0000000002' };
export const BLUE_FERN_URL =
  'https://www.google.com/maps/place/Blue+Fern+Coffee/@37.7712345,-122.4123456,17z/data=!4m6!3m5!1s0x808f7e2f4a7b0c1d:0x1a2b3c4d5e6f7081!8m2!3d37.7712345!4d-122.4123456!16s%2Fg%2F11fake0001';
const REVIEW_TOKEN = 'CAESBkVnSUlDZw==';

export interface SeenRequest {
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
}
export type Fault = { kind: 'status'; status: number } | { kind: 'consent' } | { kind: 'sorry' } | { kind: 'hang' };

/**
 * A local fake of www.google.com's Maps endpoints that replays the gmaps fixtures as they are and builds
 * paging and variants by transforming them, never by inventing another format:
 *
 * - `/search?tbm=map`: the real query gets the real payload (2 places; page 2 is the payload with its
 *   places removed). "<query> N places" gets N places cloned from the two real place arrays with distinct
 *   ids, paged by the pb's `!8i` offset and `!7i` size. "repeat" ignores the offset (silent truncation),
 *   "missing" nulls and shortens positions, "xhr" is the XHR-wrapped variant, "consent" the consent 302,
 *   "sorry" the unusual-traffic 429.
 * - `/maps/preview/place`, `/maps/place/…`, `/maps?cid=`: the preview / place-page fixtures carrying the
 *   requested place's array.
 * - `/maps/rpc/listugcposts`: reviews page 1 → 2 by token; places in `limitedView` get the signed-out
 *   answer (`limitedMode`: 403, or the page with its reviews and token removed).
 */
export class FakeMaps {
  readonly requests: SeenRequest[] = [];
  /** Places whose reviews Google withholds (fid). */
  readonly limitedView = new Set<string>();
  limitedMode: 'forbidden' | 'empty' = 'empty';
  latencyMs = 0;
  /** Rewrites a search document (parsed `)]}'` JSON) before it is served, by query: derive variants (ads, drift). */
  searchTransform: (q: string, doc: any) => any = (_q, d) => d;
  private readonly places = new Map<string, any[]>();
  private readonly faults: { match: RegExp; fault: Fault; times: number }[] = [];
  private readonly search = gmapsJson('search_tbm_map.txt');
  private readonly preview = gmapsJson('place_preview.txt');
  private readonly page = gmapsText('place_page.html');
  private server!: Server;
  url = '';

  static async start(): Promise<FakeMaps> {
    const f = new FakeMaps();
    for (const row of f.search[0][1].slice(1)) f.remember(row[14]);
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

  /** The next `times` requests whose path+query matches fail this way. */
  fault(match: RegExp, fault: Fault, times = 1): void {
    this.faults.push({ match, fault, times });
  }

  /** Config for [scrapers.places] pointing at this server, without politeness pauses. */
  toml(extra = ''): string {
    return [
      '[scrapers.places]',
      `base_url = "${this.url}"`,
      'requests_per_minute = 60000',
      'burst = 1000',
      'jitter_ms = 0',
      'retry_backoff_ms = 10',
      'blocked_cooldown_seconds = 0',
      extra,
    ].join('\n');
  }

  count(path: RegExp): number {
    return this.requests.filter((r) => path.test(r.path)).length;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private remember(place: any[]): void {
    this.places.set(place[10], place);
    if (place[78]) this.places.set(place[78], place);
    this.places.set(BigInt(place[10].split(':')[1]).toString(), place);
  }

  /** Place `idx` of a derived search: a real place array (alternating) with distinct ids, title and link. */
  derived(idx: number): any[] {
    const base = this.search[0][1][1 + (idx % 2)][14];
    const p = clone(base);
    const hex = (0x5000_0000 + idx).toString(16);
    p[10] = `0x808f7e0000000000:0x${hex}`;
    p[11] = `${base[11]} #${idx + 1}`;
    p[18] = String(base[18]).replace(base[11], p[11]);
    p[78] = `ChIJFAKEderived${String(idx).padStart(10, '0')}`;
    p[27] = String(base[27])
      .replace(base[10], p[10])
      .replace(encodeURIComponent(base[11]).replaceAll('%20', '+'), encodeURIComponent(p[11]).replaceAll('%20', '+'));
    this.remember(p);
    return p;
  }

  private searchPage(q: string, offset: number, size: number): any {
    const doc = clone(this.search);
    const meta = doc[0][1][0];
    const rows = (places: any[]) =>
      places.map((p, i) => {
        const row = clone(this.search[0][1][1 + (i % 2)]);
        row[14] = p;
        return row;
      });
    const n = /(\d+) places/.exec(q);
    if (n) {
      const total = Number(n[1]);
      const from = /repeat/.test(q) ? 0 : offset;
      const idx = Array.from({ length: Math.max(0, Math.min(size, total - from)) }, (_, i) => from + i);
      doc[0][1] = [meta, ...rows(idx.map((i) => this.derived(i)))];
    } else if (q.includes(REAL_QUERY) && offset === 0) {
      if (/missing/.test(q)) {
        // Index drift: the first place array cut short (no place id, address parts, phone, hours…) and
        // the rating block gone; the second keeps its length but loses title position and website.
        const [a, b] = [doc[0][1][1][14], doc[0][1][2][14]];
        doc[0][1][1][14] = a.slice(0, 12);
        doc[0][1][1][14][4] = null;
        b[11] = null;
        b[7] = null;
        b[175] = [null, [null, 1], 0, [1, 2]];
      }
    } else {
      doc[0][1] = [meta];
    }
    doc[0][0] = q;
    meta[10][0] = q;
    return doc;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url!, 'http://x');
    this.requests.push({ path: u.pathname, query: u.searchParams, headers: req.headers });
    if (this.latencyMs) await new Promise((r) => setTimeout(r, this.latencyMs));
    const fault = this.faults.find((f) => f.times > 0 && f.match.test(u.pathname + u.search));
    if (fault) {
      fault.times--;
      return this.failWith(res, fault.fault);
    }
    const pb = u.searchParams.get('pb') ?? '';
    const hl = u.searchParams.get('hl');
    if (u.pathname === '/search' && u.searchParams.get('tbm') === 'map') {
      const q = u.searchParams.get('q') ?? '';
      if (q.includes('consent')) return this.failWith(res, { kind: 'consent' });
      if (q.includes('sorry')) return this.failWith(res, { kind: 'sorry' });
      // The XHR variant; "xhr trailing": with the closing /*""*/ the browser's XHR answers carry; "xhr trailing
      // only": that closing mark without the leading one.
      if (q.includes('xhr') && !/!8i[1-9]/.test(pb)) {
        const wrapped = gmapsText('search_tbm_map_xhr_variant.txt');
        const body = q.includes('trailing only') ? wrapped.trimStart().slice('/*""*/'.length) : wrapped;
        return this.send(res, 200, 'application/json; charset=UTF-8', body + (q.includes('trailing') ? '/*""*/' : ''));
      }
      const offset = Number(/!8i(\d+)/.exec(pb)?.[1] ?? 0);
      const size = Number(/!7i(\d+)/.exec(pb)?.[1] ?? 20);
      return this.send(
        res,
        200,
        'application/json; charset=UTF-8',
        xssi(this.searchTransform(q, this.searchPage(q, offset, size))),
      );
    }
    if (u.pathname === '/maps/preview/place') {
      const id = /!1s([^!]+)/.exec(pb)?.[1] ?? '';
      const place = this.places.get(id);
      if (!place) return this.send(res, 404, 'text/html', '<html><body>Not found</body></html>');
      return this.send(res, 200, 'application/json; charset=UTF-8', xssi(this.detailDoc(place)));
    }
    if (u.pathname.startsWith('/maps/place/') || (u.pathname === '/maps' && u.searchParams.has('cid'))) {
      const id =
        u.searchParams.get('cid') ?? /!1s(0x[0-9a-f]+:0x[0-9a-f]+)/.exec(decodeURIComponent(u.pathname))?.[1] ?? '';
      const place = this.places.get(id);
      if (!place) return this.send(res, 404, 'text/html', '<html><body>Not found</body></html>');
      if (place[10] === BLUE_FERN.fid) return this.send(res, 200, 'text/html; charset=UTF-8', this.page);
      return this.send(res, 200, 'text/html; charset=UTF-8', this.pageFor(place));
    }
    if (u.pathname === '/maps/rpc/listugcposts') {
      const id = /!1m6!1s([^!]+)/.exec(pb)?.[1] ?? '';
      const token = /!2m2!1i\d+!2s([^!]*)/.exec(pb)?.[1] ?? '';
      const place = this.places.get(id);
      if (!place || hl === null) return this.send(res, 400, 'text/html', '<html><body>Bad request</body></html>');
      if (this.limitedView.has(place[10])) {
        if (this.limitedMode === 'forbidden')
          return this.send(res, 403, 'text/html', '<html><body>Forbidden</body></html>');
        const empty = gmapsJson('reviews_page1.txt');
        empty[1] = null;
        empty[2] = [];
        return this.send(res, 200, 'application/json; charset=UTF-8', xssi(empty));
      }
      const doc =
        token === '' ? gmapsJson('reviews_page1.txt') : token === REVIEW_TOKEN ? gmapsJson('reviews_page2.txt') : null;
      if (!doc) return this.send(res, 400, 'text/html', '<html><body>Bad token</body></html>');
      if (place[10] !== BLUE_FERN.fid) {
        // Another place's reviews: the same pages with that place's ids.
        for (const r of doc[2]) {
          r[0][0] = `${r[0][0]}-${place[78]}`;
          r[0][1][0] = `0x0:${place[10].split(':')[1]}`;
        }
      }
      return this.send(res, 200, 'application/json; charset=UTF-8', xssi(doc));
    }
    return this.send(res, 404, 'text/html', '<html><body>Not found</body></html>');
  }

  /** The preview document with `place` at jd[6] and its cid at jd[25]. */
  private detailDoc(place: any[]): any {
    const jd = clone(this.preview);
    jd[6] = place;
    jd[25][3][0][13][0][0][1] = BigInt(place[10].split(':')[1]).toString();
    return jd;
  }

  /** The place page fixture with another place's detail JSON in APP_INITIALIZATION_STATE[3][6]. */
  private pageFor(place: any[]): string {
    const start = this.page.indexOf('[', this.page.indexOf('APP_INITIALIZATION_STATE='));
    const end = this.page.indexOf(';window.APP_FLAGS');
    const state = JSON.parse(this.page.slice(start, end));
    state[3][6] = xssi(this.detailDoc(place));
    return this.page.slice(0, start) + JSON.stringify(state) + this.page.slice(end);
  }

  private failWith(res: ServerResponse, f: Fault): void {
    if (f.kind === 'hang') return;
    if (f.kind === 'status')
      return this.send(res, f.status, 'text/html', `<html><body>Error ${f.status}</body></html>`);
    if (f.kind === 'consent') {
      const [status, location] = gmapsText('consent_redirect.txt').split('\n');
      res.writeHead(Number(status!.split(' ')[1]), { location: location!.replace(/^Location:\s*/, '').trim() });
      res.end();
      return;
    }
    this.send(res, 429, 'text/html', gmapsText('sorry_429.html'));
  }

  private send(res: ServerResponse, status: number, type: string, body: string): void {
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  }
}
