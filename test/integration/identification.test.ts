import test from 'ava';
import sharp from 'sharp';
import { call, face, form, labels, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

/**
 * Identification on real photos: every identity with two or more photos is enrolled from all but its
 * last photo; the held-out photo must find it at rank 1. Singletons are never enrolled and must not
 * match anyone at the pack's default threshold.
 */
let d: TestDaemon;
test.before(async () => {
  d = await startTestDaemon();
});
test.after.always(async () => {
  await d?.close();
});

const enrolled = Object.entries(labels.identities).filter(([, files]) => files.length >= 2);

for (const profile of ['fp32_v1', 'int8_x736_v1', 'fp16_v1']) {
  test.serial(
    `${profile}: rank-1 for every held-out photo, no match for singletons, both faces of a group photo`,
    async (t) => {
      const cid = `id-${profile.replace(/_/g, '-')}`;
      t.is((await call(d, 'POST', '/v1/collections', { id: cid, name: cid, search: { profile } })).status, 201);
      for (const [pid, files] of enrolled) {
        const r = await post(
          d,
          `/v1/collections/${cid}/persons`,
          form({ id: pid, name: pid, images: files.slice(0, -1).map(face) }),
        );
        t.is(r.res.status, 201, `${pid}: ${JSON.stringify(r.json.rejected_images ?? r.json.error)}`);
        t.deepEqual(r.json.rejected_images, []);
      }
      for (const [pid, files] of enrolled) {
        const s = await post(
          d,
          `/v1/collections/${cid}/search`,
          form({ image: face(files[files.length - 1]!), limit: '3' }),
        );
        t.is(s.res.status, 200);
        t.is(
          s.json.matches[0]?.person.id,
          pid,
          `${pid}: ${JSON.stringify(s.json.matches.map((m: { person: { id: string }; similarity: number }) => [m.person.id, m.similarity]))}`,
        );
      }
      for (const single of labels.singletons_for_negatives) {
        const file = labels.identities[single]![0]!;
        const s = await post(d, `/v1/collections/${cid}/search`, form({ image: face(file) }));
        t.is(s.res.status, 200, file);
        t.deepEqual(
          s.json.matches,
          [],
          `${single} matched ${JSON.stringify(s.json.matches.map((m: { person: { id: string }; similarity: number }) => [m.person.id, m.similarity]))}`,
        );
      }
      // Each face of the office photo, cut out with context around its box, finds the right person.
      const group = face('groups/obama_biden_office.jpg');
      const det = await post(d, '/v1/detect', form({ image: group }));
      const { width, height } = (await sharp(group).rotate().metadata()) as { width: number; height: number };
      const faces = [...det.json.faces].sort((a, b) => a.bbox.pixels.x - b.bbox.pixels.x);
      const expected = labels.groups['groups/obama_biden_office.jpg']!.left_to_right!;
      t.is(faces.length, expected.length);
      for (const [i, f] of faces.entries()) {
        const { x, y, width: w, height: h } = f.bbox.pixels;
        const left = Math.max(0, x - w),
          top = Math.max(0, y - h);
        const crop = await sharp(group)
          .rotate()
          .extract({ left, top, width: Math.min(width - left, 3 * w), height: Math.min(height - top, 3 * h) })
          .jpeg()
          .toBuffer();
        const s = await post(d, `/v1/collections/${cid}/search`, form({ image: crop }));
        t.is(s.json.matches[0]?.person.id, expected[i], `face ${i}: ${JSON.stringify(s.json.matches)}`);
      }
    },
  );
}
