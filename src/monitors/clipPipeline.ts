/**
 * The GStreamer side of event clips: the camera's encoded stream, depayloaded and parsed, muxed by mp4mux
 * into fragmented MP4 (a fragment per key frame interval: mp4mux starts a new one at each key frame, and at
 * the latest after `fragment-duration`) and pulled from the appsink named `record`. Nothing is decoded or
 * encoded for it. The depayloader and parser depend on the codec, which the RTSP probe reads from the SDP
 * (parsebin would pick them itself, but fixes its output to byte-stream before it is linked, which mp4mux
 * does not take).
 */

/** The codecs a clip can be recorded from: the RTP depayloader and the parser of each. */
const CODECS: Record<string, { depay: string; parse: string }> = {
  H264: { depay: 'rtph264depay', parse: 'h264parse' },
  H265: { depay: 'rtph265depay', parse: 'h265parse' },
};

/** mp4mux's longest fragment (ms): a camera's key frame interval longer than this gives fragments without one. */
export const FRAGMENT_MS = 10_000;

/** Whether clips can be recorded from a stream of this SDP encoding name (H264, H265; case-insensitive). */
export const recordableCodec = (codec: string | null): boolean =>
  codec !== null && Object.hasOwn(CODECS, codec.toUpperCase());

/**
 * mp4mux and its appsink. A leaky queue in front: when JavaScript falls behind, the muxer's input drops
 * (a gap in the clip) instead of stopping the decoder that shares the tee; the appsink holds at most 2000
 * buffers (about a minute of frames) before it pushes back on that queue.
 */
const MUX =
  `queue leaky=downstream max-size-buffers=0 max-size-bytes=0 max-size-time=${2 * FRAGMENT_MS}000000 ! ` +
  `mp4mux fragment-duration=${FRAGMENT_MS} streamable=true ! appsink name=record sync=false async=false max-buffers=2000`;

/**
 * The tee's record branch starts with errorignore: a muxer that fails (mp4mux errors on a buffer without a
 * PTS, which decoding does not need, as some cameras send) returns an error flow upstream, and the tee would
 * hand it to the source, stopping the decoder and the whole camera. Converted to OK there, only the record
 * branch stops; the monitor notices its silence (ClipRecorder's stall watch) and ends the clip record_failed.
 * Dropping those buffers before the muxer instead would need a pad probe, which the addon cannot install, and
 * h264timestamper only copies the last timestamp onto them (a clip of frames all at one instant).
 */
const ISOLATE = 'errorignore ignore-error=true ignore-notlinked=true ignore-notnegotiated=true convert-to=ok ! ';

/** The record branch gives nothing for this long while frames are decoded: its muxer has stopped. */
export const RECORD_STALL_MS = 2 * FRAGMENT_MS;

/**
 * What `{record}` becomes in a monitor pipeline template: right after the RTSP source, the depayloader and
 * parser, a tee whose one branch is the mux and whose other goes on to the template's decoder (in the same
 * streaming thread as without clips). Null for a codec clips cannot be recorded from.
 */
export function recordTee(codec: string | null): string | null {
  const c = codec === null ? undefined : CODECS[codec.toUpperCase()];
  if (!c) return null;
  return `${c.depay} ! ${c.parse} ! tee name=rec rec. ! ${ISOLATE}${MUX} rec. ! `;
}

/**
 * A pipeline that only records (a second connection to the camera): for a monitor whose detection reads a
 * sub-stream, or whose decode template has no `{record}` (the hardware decoder templates).
 */
export function recordPipeline(codec: string | null): string | null {
  const c = codec === null ? undefined : CODECS[codec.toUpperCase()];
  if (!c) return null;
  return `rtspsrc name=src latency={latency_ms} protocols=tcp ! ${c.depay} ! ${c.parse} ! ${MUX}`;
}
