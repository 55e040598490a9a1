import test from 'ava';
import sharp from 'sharp';
import {
  encodeWidth,
  followMs,
  Pacer,
  partHeaders,
  PreviewHub,
  type PreviewPart,
} from '../../src/monitors/previewHub.js';
import type { PreviewFaceT } from '../../src/contract/preview.js';

const W = 640,
  H = 360;
const pixels = new Uint8Array(W * H * 3).fill(90);
const frame = (sequence: number) => ({ data: pixels, width: W, height: H, sequence });
const FACE: PreviewFaceT = {
  status: 'matched',
  box: { left: 0.4, top: 0.3, width: 0.1, height: 0.2 },
  person: { id: 'obama', name: 'Barack Obama' },
  similarity: 0.71,
};

/** A client that records what it got (its socket never fills up). */
function client() {
  const got: PreviewPart[] = [];
  return {
    got,
    viewer: { write: (p: PreviewPart) => (got.push(p), true), onDrain: () => undefined, end: () => undefined },
  };
}
/** Lets the hub's encodes finish. */
const settle = async (hub: PreviewHub) => {
  for (let i = 0; i < 200 && (hub as unknown as { encoding: boolean }).encoding; i++)
    await new Promise((r) => setTimeout(r, 5));
};

test('encodeWidth rounds up to the step and never upscales', (t) => {
  t.is(encodeWidth(null, 1280), null);
  t.is(encodeWidth(300, 1280), 320);
  t.is(encodeWidth(480, 1280), 480);
  t.is(encodeWidth(481, 1280), 640);
  t.is(encodeWidth(1300, 1280), null);
  t.is(encodeWidth(1280, 1280), null);
});

test('a pacer at 5/s lets 5 of 6 frames a second through, and does not burst after a pause', (t) => {
  const p = new Pacer(200);
  let sent = 0;
  for (let i = 0; i < 60; i++) {
    const now = i * (1000 / 6);
    if (p.due(now)) {
      p.sent(now);
      sent++;
    }
  }
  t.true(sent >= 48 && sent <= 51, String(sent));
  // After 10 s without frames, two frames 50 ms apart: only the first is due.
  const later = 20_000;
  t.true(p.due(later));
  p.sent(later);
  t.false(p.due(later + 50));
});

test('followMs: at least a second, three inference intervals, the gap between analyses, at most 4 s', (t) => {
  t.is(followMs(200), 1000);
  t.is(followMs(500), 1500);
  t.is(followMs(200, 2000), 3000, 'a face standing still is analysed at the keep-alive only');
  t.is(followMs(200, 60_000), 4000);
});

test('clients get their own rate and width; one encode per width', async (t) => {
  let now = 0;
  const hub = new PreviewHub(5, 80, () => now);
  const full = client(),
    small = client(),
    small2 = client();
  hub.add(full.viewer);
  hub.add(small.viewer, { fps: 1, width: 400 });
  hub.add(small2.viewer, { fps: 1, width: 480 });
  for (let seq = 1; seq <= 12; seq++) {
    now = seq * 100;
    hub.offer(frame(seq));
    await settle(hub);
  }
  t.true(full.got.length >= 5 && full.got.length <= 6, `full: ${full.got.length}`);
  t.true(small.got.length >= 1 && small.got.length <= 2, `small: ${small.got.length}`);
  t.deepEqual(
    small.got.map((p) => p.seq),
    small2.got.map((p) => p.seq),
  );
  const meta = await sharp(small.got[0]!.jpeg).metadata();
  t.is(meta.width, 480);
  t.is((await sharp(full.got[0]!.jpeg).metadata()).width, W);
  // The two small clients shared their encodes: JPEGs = full ones + one per small frame.
  t.is(hub.frames, full.got.length + small.got.length);
  t.true(small.got.every((p) => p.faces === null));
});

test('boxed clients follow the analysed frames while faces are in view, and never go back', async (t) => {
  let now = 0;
  const hub = new PreviewHub(10, 80, () => now);
  const boxed = client(),
    plain = client();
  hub.add(boxed.viewer, { boxes: true });
  hub.add(plain.viewer);
  const step = async (seq: number, analysed?: PreviewFaceT[]) => {
    now = seq * 100;
    hub.offer(frame(seq));
    await settle(hub);
    if (analysed) {
      hub.offerAnalysed(frame(seq), analysed, 200);
      await settle(hub);
    }
  };
  await step(1);
  await step(2);
  t.false(hub.wantsAnalysed);
  await step(3, [FACE]); // the reader's frame 3 went out first: the analysed 3 is not sent again
  t.true(hub.wantsAnalysed);
  await step(4);
  await step(5, [FACE]);
  await step(6);
  await step(7, []); // the face left: this frame clears the boxes
  await step(8);
  const seqs = boxed.got.map((p) => p.seq);
  t.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
    'forward only',
  );
  t.deepEqual(
    boxed.got.map((p) => [p.seq, p.faces?.length ?? null]),
    [
      [1, null],
      [2, null],
      [3, null],
      [5, 1],
      [7, 0],
    ],
  );
  t.deepEqual(
    plain.got.map((p) => p.seq),
    [1, 2, 3, 4, 5, 6, 7, 8],
  );
  // A second after the last face the boxed client gets the newest frames again.
  now = 7 * 100 + 1001;
  hub.offer(frame(20));
  await settle(hub);
  t.false(hub.wantsAnalysed);
  t.is(boxed.got.at(-1)!.seq, 20);
  t.is(boxed.got.at(-1)!.faces, null);
});

test('part headers: the frame number always, the faces as ASCII JSON only on analysed frames', (t) => {
  const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xd9]);
  t.is(
    partHeaders({ jpeg, seq: 7, faces: null }, 'frame'),
    '--frame\r\nContent-Type: image/jpeg\r\nContent-Length: 4\r\nX-Frame-Seq: 7\r\n\r\n',
  );
  const h = partHeaders({ jpeg, seq: 8, faces: [{ ...FACE, person: { id: 'zoe', name: 'Zoë “Z” Ça\r\n' } }] }, 'frame');
  t.regex(
    h,
    /^--frame\r\nContent-Type: image\/jpeg\r\nContent-Length: 4\r\nX-Frame-Seq: 8\r\nX-Faces: \[.*\]\r\n\r\n$/,
  );
  t.true(/^[\x20-\x7e\r\n]*$/.test(h), 'ASCII only');
  const faces = JSON.parse(/X-Faces: (.*)\r\n/.exec(h)![1]!) as PreviewFaceT[];
  t.is(faces[0]!.person!.name, 'Zoë “Z” Ça\r\n');
});
