import test from 'ava';
import sharp from 'sharp';
import { manyScanJpeg } from '../helpers/progressiveJpeg.js';
import { oneBitPng } from '../helpers/shared.js';
import { call, face, form, post, startTestDaemon } from '../helpers/daemon.js';

// Issue 17.1: a 1 x 39,000,000 PNG (about 150 KB, under the pixel cap) took 12-27 s of libpng time inside
// the only inference slot. It is refused from its header now, and a slow image (shape limits lifted
// here on purpose) is decoded outside the inference limiter and abandoned when its client goes away.

test.serial(
  'default limits: the 1 x 39,000,000 PNG is 413 image_too_large (max_image_side) on every image route',
  async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.close());
    const png = oneBitPng(1, 39_000_000);
    for (const path of ['/v1/detect', '/v1/embeddings']) {
      const { res, json } = await post(d, path, form({ image: png }));
      t.is(res.status, 413, path);
      t.is(json.error.code, 'image_too_large');
      t.deepEqual(json.error.details, { max_image_side: 16384, width: 1, height: 39_000_000 });
    }
  },
);

test.serial(
  'a slow decode runs outside the only inference slot and is abandoned when its client goes away',
  async (t) => {
    const d = await startTestDaemon({
      server: [
        'max_image_side = 100000000',
        'max_image_aspect_ratio = 100000000',
        'image_decode_timeout_seconds = 120',
      ],
      toml: '[inference]\nmax_concurrency = 1',
    });
    t.teardown(() => d.close());
    const stats = async (): Promise<Record<string, number>> => {
      const found = JSON.stringify((await call(d, 'GET', '/v1/system')).json).match(
        /"inference_concurrency":(\{[^}]*\})/,
      );
      return JSON.parse(found![1]!) as Record<string, number>;
    };
    const slowClient = new AbortController();
    let slowSettled = false;
    const slow = fetch(d.url + '/v1/detect', {
      method: 'POST',
      body: form({ image: oneBitPng(1, 39_000_000) }),
      headers: d.auth,
      signal: slowClient.signal,
    })
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        slowSettled = true;
      });
    // Wait until the slow image is being decoded, then ask for a normal detection on the same single slot.
    for (let i = 0; i < 200 && (await stats()).decoding === 0; i++) await new Promise((r) => setTimeout(r, 50));
    t.is((await stats()).decoding, 1);
    const normal = await post(d, '/v1/detect', form({ image: face('identities/obama/1.jpg') }));
    t.is(normal.res.status, 200);
    t.is(normal.json.faces.length, 1);
    t.false(slowSettled, 'the normal request finished while the slow image was still decoding');
    slowClient.abort();
    await slow;
    let s = await stats();
    for (let i = 0; i < 200 && s.decodes_abandoned === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      s = await stats();
    }
    t.is(s.decodes_abandoned, 1);
    t.is(s.active, 0, 'the inference slot was never taken by the abandoned image');
  },
);

test.serial(
  'issue 36.1: progressive JPEGs of thousands of scans are 422 invalid_image (too_many_scans) on the worker-decoded and the stage-decoded path while a normal detect beside them succeeds; a normal progressive JPEG works',
  async (t) => {
    const d = await startTestDaemon({ toml: '[inference]\nmax_concurrency = 1' });
    t.teardown(() => d.close());
    // 1920x1080 is decoded in an inference worker (WORKER_DECODE_MAX_PIXELS), 2560x1440 in the decode stage.
    const hostile = [await manyScanJpeg(1920, 1080, 3000), await manyScanJpeg(2560, 1440, 3000)];
    const [normal, ...refused] = await Promise.all([
      post(d, '/v1/detect', form({ image: face('identities/obama/1.jpg') })),
      ...hostile.map((image) => post(d, '/v1/detect', form({ image }))),
      ...hostile.map((image) => post(d, '/v1/embeddings', form({ image }))),
    ]);
    t.is(normal!.res.status, 200);
    t.is(normal!.json.faces.length, 1);
    for (const { res, json } of refused) {
      t.is(res.status, 422);
      t.is(json.error.code, 'invalid_image');
      t.deepEqual(json.error.details, { reason: 'too_many_scans', max_jpeg_scans: 100 });
    }
    const progressive = await sharp(face('identities/obama/1.jpg')).jpeg({ progressive: true }).toBuffer();
    const ok = await post(d, '/v1/detect', form({ image: progressive }));
    t.is(ok.res.status, 200);
    t.is(ok.json.faces.length, 1);
  },
);
