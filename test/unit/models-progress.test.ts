import test from 'ava';
import { Sink } from '../helpers/shared.js';
import { createProgress } from '../../src/models/progress.js';

test('non-TTY progress prints one plain line per 10%', (t) => {
  const sink = new Sink(false);
  const task = createProgress(sink)('f.onnx', 1000);
  for (let n = 50; n <= 1000; n += 50) task.update(n);
  task.finish(true);
  const lines = sink.text.trim().split('\n');
  t.is(lines.length, 10);
  t.is(lines[0], 'f.onnx: 10% (100 B/1000 B)');
  t.is(lines[9], 'f.onnx: 100% (1000 B/1000 B)');
  t.false(sink.text.includes('\r'));
});

test('TTY progress redraws a bar in place and ends the line', (t) => {
  const sink = new Sink(true);
  const task = createProgress(sink)('f.onnx', 2048);
  task.update(1024);
  task.finish(true);
  t.true(sink.text.startsWith('\rf.onnx ['));
  t.regex(sink.text, /\[#{15}-{15}\]\s+50%/);
  t.true(sink.text.endsWith('\n'));
});
