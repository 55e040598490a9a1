import { Errors } from '../../contract/errors.js';

/** Google's feature id ("data id"): two hex halves, `0x…:0x…`. */
const FID = /^0x[0-9a-f]{1,16}:0x[0-9a-f]{1,16}$/i;
/** Place ids as the Places API and Maps share them (ChIJ…, GhIJ… and the longer Eh…/Ei… forms). */
export const PLACE_ID = /^(?:ChIJ|GhIJ|Eh|Ei|Ej|Ek)[A-Za-z0-9_-]{10,250}$/;
const MAX_U64 = (1n << 64n) - 1n;

/** The decimal cid of a feature id: the second hex half as an unsigned 64-bit integer. */
export function cidFromFid(fid: string): string | null {
  if (!FID.test(fid)) return null;
  return BigInt(fid.split(':')[1]!).toString();
}

/** The feature id of a cid, with an unknown first half (Google accepts `0x0:0x…` where only the cid is known). */
export function fidFromCid(cid: string): string | null {
  if (!/^\d{1,20}$/.test(cid)) return null;
  const n = BigInt(cid);
  if (n === 0n || n > MAX_U64) return null;
  return `0x0:0x${n.toString(16)}`;
}

export const isFid = (s: string): boolean => FID.test(s);

export type MapsTarget =
  | {
      kind: 'place';
      fid: string | null;
      placeId: string | null;
      kgmid: string | null;
      name: string | null;
      path: string;
    }
  | { kind: 'search'; query: string; lat: number | null; lng: number | null; zoom: number | null }
  | { kind: 'place_id'; placeId: string }
  | { kind: 'cid'; cid: string };

const GOOGLE_HOST = /^(?:www\.|maps\.)?google\.(?:com|[a-z]{2,3}|co\.[a-z]{2}|com\.[a-z]{2})$/;
const unsupported = (url: string, why: string) => Errors.unsupportedUrl(url, why);

/** The `@lat,lng,zoomz` viewport of a Maps path, if any. */
function viewport(path: string): { lat: number; lng: number; zoom: number | null } | null {
  const m = /@(-?\d+(?:\.\d+)?),(-?\d+(?:\.\d+)?)(?:,(\d+(?:\.\d+)?)z)?/.exec(path);
  if (!m) return null;
  const lat = Number(m[1]);
  const lng = Number(m[2]);
  if (Math.abs(lat) > 90 || Math.abs(lng) > 180) return null;
  return { lat, lng, zoom: m[3] ? Number(m[3]) : null };
}

const decode = (s: string): string => {
  try {
    return decodeURIComponent(s.replaceAll('+', ' '));
  } catch {
    return s;
  }
};

/**
 * What a Maps URL points at: a place page (feature id, place id and kgmid from its `data=` blob), a
 * search (query and viewport), a place id (`query_place_id`, `q=place_id:`) or a cid (`?cid=`).
 * Short links (maps.app.goo.gl) and other hosts are a 400: they would need a redirect we do not follow.
 */
export function classifyMapsUrl(raw: string): MapsTarget {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw unsupported(raw, 'not a URL');
  }
  const host = u.hostname.toLowerCase();
  if (host === 'maps.app.goo.gl' || host === 'goo.gl')
    throw unsupported(raw, 'short links are not followed; open it once and pass the long google.com/maps URL');
  if (!GOOGLE_HOST.test(host)) throw unsupported(raw, 'not a Google Maps URL');
  const path = u.pathname;
  const q = u.searchParams;
  const cid = q.get('cid');
  if (cid !== null) {
    if (!fidFromCid(cid)) throw unsupported(raw, `cid "${cid}" is not a 64-bit decimal number`);
    return { kind: 'cid', cid: BigInt(cid).toString() };
  }
  const placeParam = q.get('query_place_id') ?? /^place_id:(.+)$/.exec(q.get('q') ?? '')?.[1] ?? null;
  if (placeParam !== null) {
    if (!PLACE_ID.test(placeParam)) throw unsupported(raw, `"${placeParam}" is not a place id (ChIJ…)`);
    return { kind: 'place_id', placeId: placeParam };
  }
  if (!path.startsWith('/maps')) throw unsupported(raw, 'not a Google Maps URL');
  const full = path + decode(u.search);
  const place = /^\/maps\/place\/([^/]+)/.exec(path);
  if (place || /!1s0x[0-9a-f]+:0x[0-9a-f]+/i.test(full)) {
    const fid = /!1s(0x[0-9a-f]+:0x[0-9a-f]+)/i.exec(full)?.[1]?.toLowerCase() ?? null;
    const placeId = /!19s([A-Za-z0-9_-]+)/.exec(full)?.[1] ?? null;
    const kgmid = /!16s(%2F[gm]%2F[^!?/]+|\/[gm]\/[^!?/]+)/.exec(path + u.search)?.[1] ?? null;
    if (!fid && !placeId)
      throw unsupported(
        raw,
        'a place URL without its data= identifiers (!1s0x…:0x…); copy the full URL from the address bar',
      );
    return {
      kind: 'place',
      fid: fid && isFid(fid) ? fid : null,
      placeId: placeId && PLACE_ID.test(placeId) ? placeId : null,
      kgmid: kgmid ? decode(kgmid) : null,
      name: place ? decode(place[1]!) : null,
      path,
    };
  }
  const search = /^\/maps\/search\/([^/@]+)/.exec(path);
  const query = search ? decode(search[1]!) : (q.get('query') ?? q.get('q'));
  if (query && query.trim()) {
    const vp = viewport(path);
    return { kind: 'search', query: query.trim(), lat: vp?.lat ?? null, lng: vp?.lng ?? null, zoom: vp?.zoom ?? null };
  }
  throw unsupported(raw, 'not a place, search, place_id or cid URL');
}

/** "lat,lng" (optionally ",zoom") as a viewport; anything else is a place name for the query. */
export function parseCoordinates(location: string): { lat: number; lng: number; zoom: number | null } | null {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*(?:,\s*(\d+(?:\.\d+)?)z?)?\s*$/.exec(location);
  if (!m) return null;
  const lat = Number(m[1]);
  const lng = Number(m[2]);
  if (Math.abs(lat) > 90 || Math.abs(lng) > 180) return null;
  return { lat, lng, zoom: m[3] ? Number(m[3]) : null };
}
