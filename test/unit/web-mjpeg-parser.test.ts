import test from 'ava';
import { MultipartParser, boundaryOf } from '../../src/web/mjpegParser.js';
import { containRect } from '../../src/web/letterbox.js';
import { overlayOf, partFrame } from '../../src/web/previewParts.js';

const enc = (s: string) => new TextEncoder().encode(s);
const cat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};
/** One part as the daemon writes it (monitors route): headers with Content-Length, body, CRLF. */
const part = (body: Uint8Array, withLength = true) =>
  cat(
    enc(`--frame\r\nContent-Type: image/jpeg\r\n${withLength ? `Content-Length: ${body.length}\r\n` : ''}\r\n`),
    body,
    enc('\r\n'),
  );
const jpeg = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) % 256);

test('boundaryOf reads plain and quoted boundaries, and only from multipart types', (t) => {
  t.is(boundaryOf('multipart/x-mixed-replace; boundary=frame'), 'frame');
  t.is(boundaryOf('multipart/x-mixed-replace;boundary="a b"'), 'a b');
  t.is(boundaryOf('image/jpeg'), null);
  t.is(boundaryOf(null), null);
});

test('parts come out whole whatever the chunking, including bodies that contain the boundary text', (t) => {
  const bodies = [jpeg(5000, 1), cat(enc('\r\n--frame\r\n'), jpeg(300, 2)), jpeg(1, 3), jpeg(70_000, 4)];
  const stream = cat(...bodies.map((b) => part(b)));
  for (const size of [1, 7, 64, 1000, 4096, stream.length]) {
    const p = new MultipartParser('frame');
    const got: Uint8Array[] = [];
    for (let i = 0; i < stream.length; i += size) got.push(...p.push(stream.subarray(i, i + size)));
    t.is(got.length, bodies.length, `chunk ${size}`);
    got.forEach((g, i) => t.deepEqual(g, bodies[i], `chunk ${size} part ${i}`));
  }
});

test('without Content-Length a part ends at the next boundary line', (t) => {
  const a = jpeg(2000, 5),
    b = jpeg(10, 6);
  const p = new MultipartParser('frame');
  const got = [...p.push(part(a, false)), ...p.push(part(b, false)), ...p.push(enc('--frame\r\n'))];
  t.is(got.length, 2);
  t.deepEqual(got[0], a);
  t.deepEqual(got[1], b);
});

test('the buffer is bounded: junk without a delimiter is dropped, an endless part is an error', (t) => {
  const p = new MultipartParser('frame', 1024);
  for (let i = 0; i < 100; i++) t.deepEqual(p.push(jpeg(1000, i)), []);
  t.deepEqual(p.push(part(jpeg(100, 7))).length, 1);
  t.throws(() => p.push(cat(enc('--frame\r\nContent-Length: 999999\r\n\r\n'), jpeg(2000, 8))), {
    message: /exceeds 1024 bytes/,
  });
});

test('containRect letterboxes an image inside its box', (t) => {
  t.deepEqual(containRect(1600, 900, 640, 360), { x: 0, y: 0, width: 1600, height: 900 });
  t.deepEqual(containRect(1000, 1000, 640, 360), { x: 0, y: 218.75, width: 1000, height: 562.5 });
  t.deepEqual(containRect(1000, 500, 400, 400), { x: 250, y: 0, width: 500, height: 500 });
  t.deepEqual(containRect(0, 0, 640, 360), { x: 0, y: 0, width: 0, height: 0 });
});

test('pushParts gives each part its headers: the frame number and an analysed frame’s faces', (t) => {
  const face = {
    status: 'matched',
    box: { left: 0.1, top: 0.2, width: 0.3, height: 0.4 },
    person: { id: 'zoe', name: 'Zoë' },
    similarity: 0.8,
  };
  const withHeaders = (body: Uint8Array, extra: string) =>
    cat(
      enc(`--frame\r\nContent-Type: image/jpeg\r\nContent-Length: ${body.length}\r\n${extra}\r\n`),
      body,
      enc('\r\n'),
    );
  const p = new MultipartParser('frame');
  const parts = p.pushParts(
    cat(
      withHeaders(jpeg(10, 1), 'X-Frame-Seq: 41\r\n'),
      withHeaders(jpeg(10, 2), `X-Frame-Seq: 42\r\nX-Faces: ${JSON.stringify([face]).replace('ë', '\\u00eb')}\r\n`),
      withHeaders(jpeg(10, 3), 'X-Frame-Seq: 43\r\nX-Faces: []\r\n'),
      withHeaders(jpeg(10, 4), 'X-Faces: {not json\r\n'),
    ),
  );
  t.deepEqual(
    parts.map((x) => partFrame(x.headers)),
    [
      { seq: 41, faces: null },
      { seq: 42, faces: [face] },
      { seq: 43, faces: [] },
      { seq: null, faces: null },
    ],
  );
  t.deepEqual(parts[1]!.body, jpeg(10, 2));
  const { overlay, recognised } = overlayOf([face as never, { ...face, status: 'unknown', person: null } as never]);
  t.deepEqual(
    overlay.map((o) => [o.label, o.kind]),
    [
      ['Zoë 0.80', 'matched'],
      ['Unknown', 'unknown'],
    ],
  );
  t.deepEqual(
    recognised.map((r) => r.name),
    ['Zoë', 'Unknown'],
  );
});
