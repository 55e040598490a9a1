import test from 'ava';
import { FULL_VIEW, relativeCost, tileParams } from '../../src/web/previewBudget.js';
import { firstFreeId, idFromName, initials, withCredentials } from '../../src/web/names.js';

test('one tile the size of the full view gets the full rate', (t) => {
  t.deepEqual(tileParams(1, 1280, 1), { fps: FULL_VIEW.fps, width: 1280 });
  t.deepEqual(tileParams(1, 2000, 2), { fps: FULL_VIEW.fps, width: 1280 }, 'never wider than the full view');
});

test('a grid of n tiles stays within one full view: n x fps x cost <= the full rate', (t) => {
  for (const n of [2, 4, 8, 16])
    for (const css of [200, 340, 480, 640, 900])
      for (const dpr of [1, 2, 3]) {
        const p = tileParams(n, css, dpr);
        t.true(p.width % 160 === 0 && p.width >= 320 && p.width <= 1280, `${n} ${css} ${dpr}: ${p.width}`);
        // At least 0.5 fps: within the budget, except when that floor applies.
        if (p.fps > 0.5) t.true(n * p.fps * relativeCost(p.width) <= FULL_VIEW.fps, `${n} ${css} ${dpr}: ${p.fps}`);
      }
  t.deepEqual(tileParams(8, 480, 1), { fps: 1.2, width: 480 });
  t.deepEqual(tileParams(4, 390, 3), { fps: 1.2, width: 1280 });
});

test('relativeCost: a full frame is 1, a small one costs at least the resize', (t) => {
  t.is(relativeCost(1280), 1);
  t.true(relativeCost(320) > 0.4 && relativeCost(320) < 0.5);
});

test('initials of a person without a saved crop', (t) => {
  t.is(initials('Barack Obama'), 'BO');
  t.is(initials('obama'), 'OB');
  t.is(initials('jean-luc picard'), 'JP');
  t.is(initials(''), '?');
});

test('ids from names: what a person or camera is called, made safe; the first one free', (t) => {
  t.is(idFromName('Zoë O’Brien'), 'zoe-o-brien');
  t.is(idFromName('  Front door (east) '), 'front-door-east');
  t.is(idFromName('***'), 'person');
  t.is(idFromName('x'.repeat(80)).length, 48);
  t.regex(idFromName('Ünïcødé Ñame 2'), /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/);
  t.is(firstFreeId('rose', new Set()), 'rose');
  t.is(firstFreeId('rose', new Set(['rose', 'rose-2'])), 'rose-3');
});

test('camera credentials typed beside the URL go into it, encoded', (t) => {
  t.is(withCredentials('rtsp://cam.lan:554/s1', '', ''), 'rtsp://cam.lan:554/s1');
  t.is(withCredentials(' rtsp://cam.lan/s1 ', 'admin', 'p@ss:w/rd'), 'rtsp://admin:p%40ss%3Aw%2Frd@cam.lan/s1');
  t.is(withCredentials('rtsp://old:x@cam.lan/s1', 'new', ''), 'rtsp://new@cam.lan/s1');
  t.is(withCredentials('RTSPS://cam.lan/s1', 'a', 'b'), 'RTSPS://a:b@cam.lan/s1');
  t.is(
    withCredentials('http://cam.lan/', 'a', 'b'),
    'http://cam.lan/',
    'not a camera URL: left for the server to refuse',
  );
});
