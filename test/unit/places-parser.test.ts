import test from 'ava';
import {
  categoryImages,
  mapPlace,
  mapReview,
  PlaceItem,
  reviewElements,
  unwrapWebsite,
  type PlaceContext,
} from '../../src/scrapers/places/items.js';
import {
  at,
  detailJsonFromPage,
  detailPlace,
  firstAt,
  parseGoogleJson,
  searchPlaces,
  str,
} from '../../src/scrapers/places/placeArray.js';
import { gmapsText } from '../helpers/fakeMaps.js';

const ctx = (over: Partial<PlaceContext> = {}): PlaceContext => ({
  scrapedAt: '2026-11-22T10:00:00.000Z',
  language: 'en',
  searchString: 'coffee',
  rank: 1,
  includeDetails: true,
  ...over,
});
const search = () => searchPlaces(parseGoogleJson(gmapsText('search_tbm_map.txt')));

test('at() walks nested arrays and answers undefined for anything missing, never throws', (t) => {
  const a = [1, [2, [3, null]], 'x'];
  t.is(at(a, 1, 1, 0), 3);
  t.is(at(a, 1, 1, 1), null);
  t.is(at(a, 1, 1, 2), undefined, 'past the end');
  t.is(at(a, 2, 0), undefined, 'into a string');
  t.is(at(a, 0, 0), undefined, 'into a number');
  t.is(at(null, 0), undefined);
  t.is(at(a, -1), undefined);
  t.deepEqual(at(a), a);
  t.is(
    firstAt(
      [null, ['moved']],
      [
        [0, 0],
        [1, 0],
      ],
      str,
    ),
    'moved',
    'the fallback path is used when the first is gone',
  );
  t.is(firstAt([], [[0]], str), null);
});

test('both search payload variants parse to the same two place arrays', (t) => {
  const plain = search();
  const xhr = searchPlaces(parseGoogleJson(gmapsText('search_tbm_map_xhr_variant.txt')));
  t.is(plain.length, 2);
  t.deepEqual(xhr, plain);
  t.throws(() => parseGoogleJson('<html>nope</html>'));
  t.deepEqual(searchPlaces([['q', [[null]]]]), [], 'metadata only: no places');
  t.deepEqual(searchPlaces({}), []);
});

test('37.9b the XHR wrapper with only its trailing /*""*/ (no leading one) parses like the others', (t) => {
  const mark = '/*""*/';
  const wrapped = gmapsText('search_tbm_map_xhr_variant.txt').trim();
  t.true(wrapped.startsWith(mark), 'the recorded variant leads with the mark');
  const trailingOnly = `${wrapped.slice(mark.length)}${mark}`;
  // Before: SyntaxError (the wrapper was only unwrapped when the mark led).
  t.deepEqual(searchPlaces(parseGoogleJson(trailingOnly)), search());
  t.deepEqual(searchPlaces(parseGoogleJson(`${wrapped}${mark}\n`)), search(), 'both marks');
  t.deepEqual(searchPlaces(parseGoogleJson(wrapped.slice(mark.length))), search(), 'no mark at all');
});

test('a search place maps to every item field of the seed', (t) => {
  const item = mapPlace(search()[0], ctx())!;
  t.like(item, {
    title: 'Blue Fern Coffee',
    categoryName: 'Coffee shop',
    categories: ['Coffee shop', 'Cafe'],
    placeId: 'ChIJFAKEplaceId0000000001',
    fid: '0x808f7e2f4a7b0c1d:0x1a2b3c4d5e6f7081',
    cid: '1885667171979194497',
    url: 'https://www.google.com/maps/place/Blue+Fern+Coffee/data=!4m2!3m1!1s0x808f7e2f4a7b0c1d:0x1a2b3c4d5e6f7081!10m1!1e1',
    address: '1200 Fake St, San Francisco, 94103',
    street: '1200 Fake St',
    neighborhood: null,
    city: 'San Francisco',
    postalCode: '94103',
    state: 'CA',
    countryCode: 'US',
    plusCode: '849V+Q2 San Francisco',
    location: { lat: 37.7712345, lng: -122.4123456 },
    website: 'https://bluefern.example/',
    phone: '(415) 555-0100',
    phoneUnformatted: '+14155550100',
    phoneInternational: '+1 415-555-0100',
    price: '$$',
    totalScore: 4.6,
    reviewsCount: 214,
    reviewsDistribution: { oneStar: 4, twoStar: 3, threeStar: 10, fourStar: 38, fiveStar: 159 },
    permanentlyClosed: false,
    temporarilyClosed: false,
    openingStatus: 'Open ⋅ Closes 6 pm',
    timezone: 'America/Los_Angeles',
    imageUrl: 'https://lh5.googleusercontent.com/p/AF1QipFAKE0001=w408-h408-k-no',
    imagesCount: 57,
    ownerName: 'Blue Fern Coffee (Owner)',
    ownerId: '100000000000000000001',
    searchString: 'coffee',
    rank: 1,
    language: 'en',
    reviewsStatus: 'not_requested',
  });
  t.deepEqual(item.openingHours, [
    { day: 'Monday', hours: '7 am–6 pm' },
    { day: 'Tuesday', hours: '7 am–6 pm' },
    { day: 'Sunday', hours: 'Closed' },
  ]);
  t.deepEqual(item.popularTimes![0], {
    day: 1,
    hours: [
      { hour: 7, occupancyPercent: 12 },
      { hour: 8, occupancyPercent: 35 },
      { hour: 9, occupancyPercent: 60 },
      { hour: 10, occupancyPercent: 44 },
    ],
  });
  t.is(item.popularTimes!.length, 2);
  t.is(item.description, null);
  t.true(PlaceItem.safeParse(item).success, 'the item matches its published schema');
  // [183][1] = [borough, street, street, city, …]: the neighborhood is the borough (null here), not the repeated street.
  const inBorough = structuredClone(search()[0]) as any[];
  inBorough[183][1][0] = 'Mission District';
  t.like(mapPlace(inBorough, ctx()), { neighborhood: 'Mission District', street: '1200 Fake St' });
});

test('website is exactly null when absent, a closed place is flagged, details are null unless asked for', (t) => {
  const closed = mapPlace(search()[1], ctx({ includeDetails: false }))!;
  t.is(closed.title, 'Sourdough Lab');
  t.is(closed.website, null);
  t.true(closed.permanentlyClosed);
  t.false(closed.temporarilyClosed);
  t.is(closed.openingHours, null);
  t.is(closed.popularTimes, null);
  t.is(closed.phoneInternational, null);
  t.is(closed.phone, '(415) 555-0199', 'basic contact stays');
  // Status text alone (no CLOSED flag) also marks it, and "temporarily closed" is its own flag.
  const p = structuredClone(search()[0]) as any[];
  p[203][1][4][0] = 'Temporarily closed';
  const temp = mapPlace(p, ctx())!;
  t.true(temp.temporarilyClosed);
  t.false(temp.permanentlyClosed);
});

test('37.9c secondary opening hours at [118] are additionalOpeningHours, per kind, in either day layout', (t) => {
  // Derived from the recorded place: its own day rows ([203][0], the 2025 layout; [34][1], the older one) under
  // the labels Google shows ("Delivery", "Takeout"); the label may come before or after the days.
  const p = structuredClone(search()[0]) as any[];
  const days2025 = structuredClone(p[203][0]);
  days2025[0][3] = [
    ['11 am–2 pm', [[11], [14]]],
    ['5–9 pm', [[17], [21]]],
  ];
  const daysOld = structuredClone(p[34][1]);
  p[118] = [
    ['Delivery', days2025],
    [daysOld, 2, 'Takeout'],
  ];
  const item = mapPlace(p, ctx())!;
  // Before: the field did not exist and [118] was never read.
  t.deepEqual(item.additionalOpeningHours, {
    Delivery: [
      { day: 'Monday', hours: '11 am–2 pm, 5–9 pm' },
      { day: 'Tuesday', hours: '7 am–6 pm' },
      { day: 'Sunday', hours: 'Closed' },
    ],
    Takeout: [
      { day: 'Monday', hours: '7 am–6 pm' },
      { day: 'Tuesday', hours: '7 am–6 pm' },
      { day: 'Sunday', hours: 'Closed' },
    ],
  });
  t.true(PlaceItem.safeParse(item).success);
  t.is(mapPlace(p, ctx({ includeDetails: false }))!.additionalOpeningHours, null, 'include_details only');
  t.is(mapPlace(search()[0], ctx())!.additionalOpeningHours, null, 'none at [118]: null');
  const odd = structuredClone(search()[0]) as any[];
  odd[118] = [['Delivery'], [null, []], 'x', [daysOld]];
  t.is(mapPlace(odd, ctx())!.additionalOpeningHours, null, 'blocks without a label or days are not hours');
});

test('missing or moved indexes give nulls, never a throw; an array without title or id is not a place', (t) => {
  const short = (search()[0] as unknown[]).slice(0, 12);
  short[4] = null;
  const item = mapPlace(short, ctx())!;
  t.like(item, {
    title: 'Blue Fern Coffee',
    fid: '0x808f7e2f4a7b0c1d:0x1a2b3c4d5e6f7081',
    placeId: null,
    totalScore: null,
    reviewsCount: null,
    phone: null,
    street: null,
    reviewsDistribution: null,
    openingHours: null,
    popularTimes: null,
    imageUrl: null,
  });
  t.deepEqual(item.categories, []);
  t.true(PlaceItem.safeParse(item).success);
  // Hours: the old position is the fallback when [203] is gone.
  const old = structuredClone(search()[0]) as any[];
  old[203] = null;
  t.deepEqual(mapPlace(old, ctx())!.openingHours![0], { day: 'Monday', hours: '7 am–6 pm' });
  t.is(mapPlace(old, ctx())!.openingStatus, 'Open ⋅ Closes 6 pm', 'status from [34][4][4]');
  // Garbage in the slots.
  const odd = structuredClone(search()[0]) as any[];
  Object.assign(odd, {
    4: 'x',
    9: [null, null, 'lat', 1],
    13: [1, 'Cafe'],
    175: [null, null, null, [1, 2]],
    10: 'not-a-fid',
  });
  const o = mapPlace(odd, ctx())!;
  t.like(o, {
    totalScore: null,
    location: null,
    categoryName: 'Cafe',
    reviewsDistribution: null,
    fid: null,
    cid: null,
  });
  t.is(mapPlace([], ctx()), null);
  t.is(mapPlace('nope', ctx()), null);
});

test('the place page and the preview carry the same place; the cid stated beside it agrees with the hex id', (t) => {
  const html = gmapsText('place_page.html');
  const json = detailJsonFromPage(html)!;
  t.true(json.startsWith(")]}'"));
  const fromPage = detailPlace(parseGoogleJson(json))!;
  const fromPreview = detailPlace(parseGoogleJson(gmapsText('place_preview.txt')))!;
  t.deepEqual(fromPage.place, fromPreview.place);
  t.is(fromPreview.cid, '1885667171979194497');
  t.deepEqual(fromPreview.place, search()[0], 'search and detail use the same indexes');
  t.is(detailJsonFromPage('<html>no state</html>'), null);
  t.is(detailJsonFromPage('<script>window.APP_INITIALIZATION_STATE=[[1],"]]"'), null, 'unbalanced literal');
  t.is(detailPlace([null]), null);
});

test('reviews map from the listugcposts element, owner reply and µs timestamps included', (t) => {
  const els = reviewElements(parseGoogleJson(gmapsText('reviews_page1.txt')));
  t.is(els.length, 2);
  const [a, b] = els.map(mapReview);
  t.deepEqual(a, {
    reviewId: 'ChZDSUhNMG9nS0VJQ0FnRkFLRTAwMRAB',
    text: 'Great cortado, friendly staff.',
    textTranslated: null,
    stars: 5,
    publishedAtDate: new Date(1771000000000).toISOString(),
    publishAt: '3 weeks ago',
    likesCount: 2,
    language: 'en',
    reviewer: {
      name: 'Ana P.',
      url: 'https://www.google.com/maps/contrib/100000000000000000111/reviews?hl=en',
      photoUrl: 'https://lh3.googleusercontent.com/a/FAKE=s120-c-rp-mo-br100',
      id: '100000000000000000111',
      numberOfReviews: 12,
    },
    ownerResponse: { text: 'Thanks Ana, see you soon!', publishedAtDate: new Date(1771086400000).toISOString() },
    imageUrls: [],
  });
  t.is(b!.stars, 3);
  t.is(b!.likesCount, 0, 'no likes is 0, not unknown');
  t.is(b!.ownerResponse, null);
  t.is(mapReview([null]), null);
  t.deepEqual(reviewElements([null, null, null]), []);
});

test('website redirects are unwrapped; category images are read with their titles', (t) => {
  t.is(unwrapWebsite('/url?q=https://shop.example/&opi=1'), 'https://shop.example/');
  t.is(unwrapWebsite('https://www.google.com/url?q=http://a.example/'), 'http://a.example/');
  t.is(unwrapWebsite('javascript:alert(1)'), null);
  t.is(unwrapWebsite(''), null);
  t.deepEqual(categoryImages(search()[0]), [
    { title: 'All', url: 'https://lh5.googleusercontent.com/p/AF1QipFAKE0001=w298-h298-k-no' },
    { title: 'Latest', url: 'https://lh5.googleusercontent.com/p/AF1QipFAKE0002=w224-h298-k-no' },
  ]);
  t.deepEqual(categoryImages([]), []);
});
