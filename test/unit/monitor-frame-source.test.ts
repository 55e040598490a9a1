import test from 'ava';
import { DEFAULT_MONITOR_PIPELINE, pipelineProblem } from '../../src/config/schema.js';
import { packRgb, parseFramerate } from '../../src/monitors/frameSource.js';

test('framerate caps', (t) => {
  t.is(parseFramerate('25/1'), 25);
  t.is(parseFramerate('30000/1001'), 29.97);
  t.is(parseFramerate('0/1'), null);
  t.is(parseFramerate(undefined), null);
});

test('RGB rows padded to 4 bytes are packed; packed buffers are used as they are', (t) => {
  const w = 3,
    h = 2,
    stride = 12; // 9 bytes of pixels + 3 of padding per row
  const padded = Buffer.alloc(stride * h, 0xee);
  for (let y = 0; y < h; y++) for (let i = 0; i < 9; i++) padded[y * stride + i] = y * 10 + i;
  t.deepEqual(Array.from(packRgb(padded, w, h)!), [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18]);
  const packed = Buffer.alloc(4 * 2 * 3, 1);
  t.is(packRgb(packed, 4, 2)!.buffer, packed.buffer);
  t.is(packRgb(Buffer.alloc(5), 4, 2), null);
});

test('the pipeline template must name src and an RGB appsink named sink', (t) => {
  t.is(pipelineProblem(DEFAULT_MONITOR_PIPELINE), null);
  t.is(
    pipelineProblem(
      'rtspsrc name=src ! rtph264depay ! h264parse ! nvv4l2decoder ! nvvidconv ! video/x-raw,format=RGBA ! videoconvert ! video/x-raw,format=RGB ! appsink name=sink',
    ),
    null,
  );
  t.regex(pipelineProblem('rtspsrc ! decodebin ! videoconvert ! video/x-raw,format=RGB ! appsink name=sink')!, /src/);
  t.regex(pipelineProblem('rtspsrc name=src ! decodebin ! appsink name=out')!, /appsink/);
  t.regex(
    pipelineProblem('rtspsrc name=src ! decodebin ! videoconvert ! video/x-raw,format=BGR ! appsink name=sink')!,
    /RGB/,
  );
});
