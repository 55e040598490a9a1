import { DEFAULT_MONITOR_PIPELINE } from './schema.js';

/**
 * The decode pipelines a camera set-up offers for `[monitors] pipeline`: the software default and one per
 * hardware decoder family (the templates of docs/cameras.md#hardware-decoding). `elements` are the GStreamer
 * elements a box needs for the preset beyond the software one's, so a box can say which it can run. The
 * hardware templates are untested on their hardware (none was available); the test connection endpoint
 * (POST /v1/monitors/test with `pipeline`) tries one against a camera before it is saved.
 */
export interface PipelinePreset {
  id: 'software' | 'jetson' | 'vaapi' | 'v4l2';
  label: string;
  description: string;
  pipeline: string;
  /** The decoder element that makes the preset usable on a box. */
  decoder: string;
}

const hardware = (decode: string, scale: string) =>
  `rtspsrc name=src latency={latency_ms} protocols=tcp ! rtph264depay ! h264parse ! ${decode} ! videorate name=rate drop-only=true max-rate={max_fps} ! ${scale} ! videoconvert ! video/x-raw,format=RGB ! appsink name=sink max-buffers=1 drop=true sync=false`;
const scaled = 'video/x-raw,width=[1,{max_side}],height=[1,{max_side}],pixel-aspect-ratio=1/1';

export const PIPELINE_PRESETS: readonly PipelinePreset[] = [
  {
    id: 'software',
    label: 'Software (any codec GStreamer decodes)',
    description: 'decodebin picks an installed decoder (avdec_h264 / avdec_h265 from gstreamer1.0-libav).',
    pipeline: DEFAULT_MONITOR_PIPELINE,
    decoder: 'decodebin',
  },
  {
    id: 'jetson',
    label: 'NVIDIA Jetson (nvv4l2decoder, H.264)',
    description: 'L4T hardware decoder; H.264 cameras only (H.265 needs rtph265depay ! h265parse).',
    pipeline: hardware('nvv4l2decoder', `nvvidconv ! ${scaled},format=RGBA`),
    decoder: 'nvv4l2decoder',
  },
  {
    id: 'vaapi',
    label: 'Intel / AMD VA-API (vah264dec, H.264)',
    description: 'GStreamer >= 1.22 va plugin with a VA driver; the service needs /dev/dri in its unit.',
    pipeline: hardware('vah264dec', `vapostproc ! ${scaled}`),
    decoder: 'vah264dec',
  },
  {
    id: 'v4l2',
    label: 'V4L2 stateful decoder (v4l2h264dec, H.264)',
    description: 'Raspberry Pi 4 and other SoCs with a /dev/video* H.264 decoder.',
    pipeline: hardware('v4l2h264dec', `videoscale ! ${scaled}`),
    decoder: 'v4l2h264dec',
  },
];

/** The preset whose template is exactly `pipeline`, or null for a template of the operator's own. */
export function presetOf(pipeline: string): PipelinePreset | null {
  return PIPELINE_PRESETS.find((p) => p.pipeline === pipeline.trim()) ?? null;
}

/** A preset id given where a pipeline template is expected (settings, the connection test) becomes its template. */
export function expandPipeline(value: string): string {
  return PIPELINE_PRESETS.find((p) => p.id === value)?.pipeline ?? value;
}
