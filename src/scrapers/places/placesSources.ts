import { classifyMapsUrl, parseCoordinates } from './placeIds.js';
import { WORLD, type Viewport } from './mapsRequests.js';
import type { PlacesScrapeRequestT } from './request.js';

export type PlacesSource =
  | { kind: 'search'; label: string; query: string; searchString: string; viewport: Viewport }
  | { kind: 'place'; label: string; path: string; fid: string | null; placeId: string | null; kgmid: string | null }
  | { kind: 'place_id'; label: string; placeId: string }
  | { kind: 'cid'; label: string; cid: string };

/**
 * Turns a validated request into sources, in request order: search_queries, then urls, then place_ids.
 * `location` scopes the typed queries (a viewport for "lat,lng[,zoom]", else "<query> in <location>");
 * a search URL keeps its own viewport. A URL that is not a Maps place/search/cid/place_id is a 400.
 */
export function planPlacesSources(req: PlacesScrapeRequestT): PlacesSource[] {
  const out: PlacesSource[] = [];
  const coords = req.location ? parseCoordinates(req.location) : null;
  for (const q of req.search_queries) {
    const query = req.location && !coords ? `${q} in ${req.location}` : q;
    out.push({
      kind: 'search',
      label: `search:${q}`,
      query,
      searchString: q,
      viewport: coords ? { lat: coords.lat, lng: coords.lng, zoom: coords.zoom ?? 14 } : WORLD,
    });
  }
  for (const url of req.urls) {
    const t = classifyMapsUrl(url);
    if (t.kind === 'search') {
      out.push({
        kind: 'search',
        label: url,
        query: t.query,
        searchString: t.query,
        viewport: t.lat !== null && t.lng !== null ? { lat: t.lat, lng: t.lng, zoom: t.zoom ?? 14 } : WORLD,
      });
    } else if (t.kind === 'place') {
      out.push({ kind: 'place', label: url, path: t.path, fid: t.fid, placeId: t.placeId, kgmid: t.kgmid });
    } else if (t.kind === 'place_id') {
      out.push({ kind: 'place_id', label: url, placeId: t.placeId });
    } else {
      out.push({ kind: 'cid', label: url, cid: t.cid });
    }
  }
  for (const id of req.place_ids) out.push({ kind: 'place_id', label: `place_id:${id}`, placeId: id });
  return out;
}
