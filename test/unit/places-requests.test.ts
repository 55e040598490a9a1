import test from 'ava';
import { isApiError } from '../../src/contract/errors.js';
import {
  nextReviewToken,
  pbOffset,
  pbReviewToken,
  previewPath,
  reviewPageSize,
  reviewsPath,
  searchPath,
  searchPb,
  WORLD,
} from '../../src/scrapers/places/mapsRequests.js';
import { cidFromFid, classifyMapsUrl, fidFromCid, parseCoordinates } from '../../src/scrapers/places/placeIds.js';
import { parseGoogleJson } from '../../src/scrapers/places/placeArray.js';
import { planPlacesSources } from '../../src/scrapers/places/placesSources.js';
import { PlacesScrapeRequest } from '../../src/scrapers/places/request.js';
import { detectBlock, isRepeatedPage } from '../../src/scrapers/places/upstreamProblems.js';
import { BLUE_FERN_URL, gmapsText } from '../helpers/fakeMaps.js';

test('cid ↔ hex feature id', (t) => {
  t.is(cidFromFid('0x808f7e2f4a7b0c1d:0x1a2b3c4d5e6f7081'), '1885667171979194497');
  t.is(cidFromFid('0x0:0xffffffffffffffff'), '18446744073709551615', 'unsigned 64-bit, no precision loss');
  t.is(cidFromFid('0x1:nothex'), null);
  t.is(cidFromFid('1885667171979194497'), null);
  t.is(fidFromCid('1885667171979194497'), '0x0:0x1a2b3c4d5e6f7081');
  t.is(fidFromCid('18446744073709551616'), null, 'past 64 bits');
  t.is(fidFromCid('0'), null);
  t.is(fidFromCid('12a'), null);
});

test('URL inputs are classified: place page, search, cid, place_id; others are a 400 naming the URL', (t) => {
  t.deepEqual(classifyMapsUrl(BLUE_FERN_URL), {
    kind: 'place',
    fid: '0x808f7e2f4a7b0c1d:0x1a2b3c4d5e6f7081',
    placeId: null,
    kgmid: '/g/11fake0001',
    name: 'Blue Fern Coffee',
    path: '/maps/place/Blue+Fern+Coffee/@37.7712345,-122.4123456,17z/data=!4m6!3m5!1s0x808f7e2f4a7b0c1d:0x1a2b3c4d5e6f7081!8m2!3d37.7712345!4d-122.4123456!16s%2Fg%2F11fake0001',
  });
  t.like(classifyMapsUrl('https://www.google.de/maps/place/X/data=!4m2!3m1!1s0x1:0x2!19sChIJFAKEplaceId0000000009'), {
    kind: 'place',
    fid: '0x1:0x2',
    placeId: 'ChIJFAKEplaceId0000000009',
  });
  t.deepEqual(classifyMapsUrl('https://www.google.com/maps/search/coffee+shops/@52.52,13.405,14z'), {
    kind: 'search',
    query: 'coffee shops',
    lat: 52.52,
    lng: 13.405,
    zoom: 14,
  });
  t.deepEqual(classifyMapsUrl('https://www.google.com/maps/search/?api=1&query=pizza'), {
    kind: 'search',
    query: 'pizza',
    lat: null,
    lng: null,
    zoom: null,
  });
  t.deepEqual(classifyMapsUrl('https://maps.google.com/?cid=1885667171979194497'), {
    kind: 'cid',
    cid: '1885667171979194497',
  });
  t.deepEqual(
    classifyMapsUrl('https://www.google.com/maps/search/?api=1&query=x&query_place_id=ChIJFAKEplaceId0000000001'),
    { kind: 'place_id', placeId: 'ChIJFAKEplaceId0000000001' },
  );
  t.deepEqual(classifyMapsUrl('https://www.google.com/maps/place/?q=place_id:ChIJFAKEplaceId0000000002'), {
    kind: 'place_id',
    placeId: 'ChIJFAKEplaceId0000000002',
  });
  for (const [url, re] of [
    ['https://example.com/maps/place/x', /not a Google Maps URL/],
    ['https://maps.app.goo.gl/AbCd', /short links/],
    ['https://www.google.com/search?q=x', /not a Google Maps URL/],
    ['https://www.google.com/maps/place/Only+A+Name', /data= identifiers/],
    ['https://www.google.com/maps?cid=99999999999999999999999', /64-bit/],
    ['https://www.google.com/maps/place/?q=place_id:short', /not a place id/],
    ['https://www.google.com/maps', /not a place, search/],
  ] as const) {
    const e = t.throws(() => classifyMapsUrl(url));
    t.true(isApiError(e));
    t.is((e as any).code, 'unsupported_url', url);
    t.regex(e!.message, re);
    t.true(e!.message.includes(url));
  }
});

test('location: coordinates become the viewport, a name scopes the query; sources keep request order', (t) => {
  t.deepEqual(parseCoordinates('52.52, 13.405'), { lat: 52.52, lng: 13.405, zoom: null });
  t.deepEqual(parseCoordinates('-33.9,18.4,12z'), { lat: -33.9, lng: 18.4, zoom: 12 });
  t.is(parseCoordinates('Berlin'), null);
  t.is(parseCoordinates('95,10'), null);
  const named = planPlacesSources(
    PlacesScrapeRequest.parse({
      search_queries: ['coffee'],
      location: 'Mission District, San Francisco',
      place_ids: ['ChIJFAKEplaceId0000000001'],
      urls: [BLUE_FERN_URL],
    }),
  );
  t.deepEqual(
    named.map((s) => [s.kind, s.label]),
    [
      ['search', 'search:coffee'],
      ['place', BLUE_FERN_URL],
      ['place_id', 'place_id:ChIJFAKEplaceId0000000001'],
    ],
  );
  t.like(named[0], { query: 'coffee in Mission District, San Francisco', searchString: 'coffee', viewport: WORLD });
  const coords = planPlacesSources(
    PlacesScrapeRequest.parse({ search_queries: ['coffee'], location: '37.77,-122.41' }),
  );
  t.like(coords[0], { query: 'coffee', viewport: { lat: 37.77, lng: -122.41, zoom: 14 } });
});

test('the request schema: strict, at least one source, bounds of the seed', (t) => {
  const ok = PlacesScrapeRequest.parse({ search_queries: ['coffee'] });
  t.like(ok, {
    max_places: 20,
    max_reviews: 0,
    max_images: 0,
    include_details: false,
    language: 'en',
    urls: [],
    place_ids: [],
  });
  for (const bad of [
    {},
    { search_queries: [] },
    { search_queries: ['x'], max_places: 0 },
    { search_queries: ['x'], max_places: 1001 },
    { search_queries: ['x'], max_reviews: 100_001 },
    { search_queries: Array.from({ length: 21 }, (_, i) => `q${i}`) },
    { place_ids: ['nope'] },
    { search_queries: ['x'], language: 'english' },
    { search_queries: ['x'], extra: 1 },
  ])
    t.false(PlacesScrapeRequest.safeParse(bad).success, JSON.stringify(bad));
  t.true(
    PlacesScrapeRequest.safeParse({
      place_ids: ['ChIJFAKEplaceId0000000001'],
      max_reviews: 100_000,
      max_places: 1000,
      language: 'pt-BR',
    }).success,
  );
});

test('pb templates: search paging by !8i offset, reviews by !2s token', (t) => {
  const pb = searchPb({ lat: 37.77, lng: -122.41, zoom: 14 }, 40);
  t.regex(pb, /!2d-122\.41!3d37\.77/);
  t.regex(pb, /!7i20!8i40!/);
  t.is(pbOffset(pb), 40);
  t.is(pbOffset(searchPb(WORLD, 0)), 0);
  const path = new URL(searchPath('coffee & tea', 'de', WORLD, 20), 'http://x');
  t.is(path.pathname, '/search');
  t.like(Object.fromEntries(path.searchParams), { tbm: 'map', hl: 'de', q: 'coffee & tea' });
  t.is(pbOffset(path.searchParams.get('pb')!), 20);
  const first = new URL(reviewsPath('0x1:0x2', 'en', 20, null, 'r'.repeat(21)), 'http://x');
  t.is(first.pathname, '/maps/rpc/listugcposts');
  t.is(pbReviewToken(first.searchParams.get('pb')!), null);
  t.regex(first.searchParams.get('pb')!, /^!1m6!1s0x1:0x2!.*!2m2!1i20!2s!5m2!1sr{21}!7e81/);
  const next = new URL(reviewsPath('0x1:0x2', 'en', 5, 'CAESBkVnSUlDZw==', 'r'.repeat(21)), 'http://x');
  t.is(pbReviewToken(next.searchParams.get('pb')!), 'CAESBkVnSUlDZw==', 'the token survives URL encoding');
  t.regex(new URL(previewPath('ChIJx', 'en'), 'http://x').searchParams.get('pb')!, /!1s ?ChIJx!/);
});

test('review token paging: a new token continues; null, empty or a repeat ends', (t) => {
  const seen = new Set<string>();
  t.is(nextReviewToken(parseGoogleJson(gmapsText('reviews_page1.txt')), seen), 'CAESBkVnSUlDZw==');
  t.is(nextReviewToken(parseGoogleJson(gmapsText('reviews_page1.txt')), seen), null, 'a repeated token would loop');
  t.is(nextReviewToken(parseGoogleJson(gmapsText('reviews_page2.txt')), new Set()), null);
  t.is(nextReviewToken([null, ''], new Set()), null);
  t.is(nextReviewToken({}, new Set()), null);
  t.is(reviewPageSize(100), 20);
  t.is(reviewPageSize(3), 3);
  t.is(reviewPageSize(0), 1);
});

test('blocks are recognised from the real consent redirect and sorry page; ordinary answers are not', (t) => {
  const [, location] = gmapsText('consent_redirect.txt').split('\n');
  t.is(detectBlock({ status: 302, location: location!.replace('Location: ', ''), body: '' })?.code, 'consent_wall');
  t.is(
    detectBlock({ status: 429, contentType: 'text/html', body: gmapsText('sorry_429.html') })?.code,
    'unusual_traffic',
  );
  t.is(
    detectBlock({ status: 200, contentType: 'text/html', body: gmapsText('sorry_429.html') })?.code,
    'unusual_traffic',
    'the captcha page also comes with 200',
  );
  t.is(
    detectBlock({ status: 302, location: 'https://www.google.com/sorry/index?continue=x', body: '' })?.code,
    'unusual_traffic',
  );
  t.is(
    detectBlock({
      status: 200,
      contentType: 'text/html',
      body: '<html><head><base href="https://consent.google.com/"></head></html>',
    })?.code,
    'consent_wall',
  );
  t.is(detectBlock({ status: 200, contentType: 'application/json', body: gmapsText('search_tbm_map.txt') }), null);
  t.is(detectBlock({ status: 200, contentType: 'text/html', body: gmapsText('place_page.html') }), null);
  t.is(detectBlock({ status: 302, location: 'https://www.google.com/maps/place/x', body: '' }), null);
  t.is(detectBlock({ status: 404, contentType: 'text/html', body: '<html>Not found</html>' }), null);
});

test('silent truncation: a later page that only repeats seen places', (t) => {
  const seen = new Set(['a', 'b']);
  t.true(isRepeatedPage(['a', 'b'], seen, 1));
  t.false(isRepeatedPage(['a', 'c'], seen, 1));
  t.false(isRepeatedPage(['a', 'b'], seen, 0), 'the first page cannot repeat');
  t.false(isRepeatedPage([], seen, 2), 'an empty page is the end');
});
