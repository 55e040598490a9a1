import test from 'ava';
import { PIPELINE_PRESETS } from '../../src/config/pipelinePresets.js';
import { loadConfig } from '../../src/config/load.js';
import { DEFAULT_MONITOR_PIPELINE } from '../../src/config/schema.js';
import { effectiveMaxStreams, hardwareDecoded, STREAMS_PER_CORE } from '../../src/config/streamCapacity.js';

const preset = (id: string) => PIPELINE_PRESETS.find((p) => p.id === id)!.pipeline;

test('the defaults suit real sites: max_streams follows the capacity, the motion gate is on, clips are off', (t) => {
  const c = loadConfig(null, {}).config;
  t.is(c.monitors.max_streams, undefined);
  t.true(c.monitors.motion.gate);
  t.false(c.monitors.clips.enabled);
});

test('unset max_streams: 4 per core with software decoding, 6 with a hardware decoder, 1 to 64', (t) => {
  t.is(effectiveMaxStreams({ pipeline: DEFAULT_MONITOR_PIPELINE }, 2), 8);
  t.is(effectiveMaxStreams({ pipeline: DEFAULT_MONITOR_PIPELINE }, 4), 4 * STREAMS_PER_CORE.software);
  for (const id of ['jetson', 'vaapi', 'v4l2']) t.is(effectiveMaxStreams({ pipeline: preset(id) }, 2), 12, id);
  t.is(effectiveMaxStreams({ pipeline: DEFAULT_MONITOR_PIPELINE }, 64), 64);
  t.is(effectiveMaxStreams({ pipeline: DEFAULT_MONITOR_PIPELINE }, 0), 1);
});

test('a configured max_streams is kept as it is, 0 included', (t) => {
  t.is(effectiveMaxStreams({ max_streams: 3, pipeline: preset('jetson') }, 16), 3);
  t.is(effectiveMaxStreams({ max_streams: 0, pipeline: DEFAULT_MONITOR_PIPELINE }, 16), 0);
});

test('hardware decoding is told by the decoder element, not by the preset being exact', (t) => {
  t.false(hardwareDecoded(DEFAULT_MONITOR_PIPELINE));
  t.true(hardwareDecoded(preset('vaapi').replace('latency={latency_ms}', 'latency=50')));
});
