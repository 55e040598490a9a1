/**
 * V8 flags the daemon's process is started with: by the systemd unit, scripts/run-dev.sh and the benches
 * (a unit test keeps them equal). `vigil serve` works without them, at more CPU per request.
 *
 * The event loop's isolate holds ~40 MB of objects while uploads pass ~30 MB/s of short-lived buffers
 * through it (socket reads, the assembled file, its copy for the worker). V8 counts buffers not yet
 * collected against the old generation's limit, which after the first full collection was ~62 MB: from
 * then on a full mark-compact (~90 ms of CPU over 40 MB) started every 0.5-3 s under four clients, 1.3 ms
 * of CPU per photo (bench/inference.ts with --trace-gc-nvp). With the limit at least 128 MB, two in the
 * same run. The heap may then grow to about that before it is collected (docs/development/decisions.md, "Inference").
 */
export const DAEMON_NODE_FLAGS = ['--initial-old-space-size=128'] as const;
