import { closeSync, ftruncateSync, mkdirSync, openSync, readSync, fstatSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ClipEndReason, ClipSink, ClipWriter } from '../monitors/clipRecorder.js';
import { initWithDuration, scanClip, type InitInfo } from '../monitors/fmp4.js';
import { isStorageFull, type StorageGuard } from '../store/storageGuard.js';
import type { HistoryStore } from './historyStore.js';
import type { SnapshotStore } from './snapshotStore.js';

/**
 * Writes all of `data` at the file's position: a nearly full disk takes part of a write without an error
 * (the rest fits no more), so a short write is followed by another for the rest, which fails with ENOSPC.
 */
function writeWhole(fd: number, data: Uint8Array): void {
  for (let at = 0; at < data.length;) {
    const n = writeSync(fd, data, at);
    if (n <= 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    at += n;
  }
}

/** A clip's duration in ms from its track ticks. */
const msOf = (ticks: number, info: Pick<InitInfo, 'timescale'>) => Math.round((ticks * 1000) / info.timescale);

/**
 * Event clips as files of the event pictures' store (SnapshotStore: `<day>/<clip id>.mp4`, 0600) with a row
 * in event_clips: the same folders, orphan sweep, trash, retention and full-disk guard as the pictures. A
 * clip is written as it records (init segment, then each fragment appended), so a crash leaves a file whose
 * whole fragments are kept at the next start (recover). Writes are synchronous: a fragment is one key frame
 * interval of the encoded stream (tens to hundreds of KB), written once a second or so per recording camera.
 */
export class ClipStore implements ClipSink {
  /** Clips not begun because the data dir was full, and clips ended early by a full disk. */
  readonly counters = { begun: 0, skippedFull: 0, endedFull: 0 };

  constructor(
    private readonly snapshots: SnapshotStore,
    private readonly store: HistoryStore,
    private readonly log: Logger,
    private readonly storage?: StorageGuard,
  ) {}

  file(path: string): string {
    return this.snapshots.file(path, 'clip');
  }

  begin(c: { id: string; monitorId: string; startedAt: number; init: Uint8Array; info: InitInfo }): ClipWriter | null {
    if (this.storage?.isFull()) {
      this.counters.skippedFull++;
      return null;
    }
    const day = new Date(c.startedAt).toISOString().slice(0, 10);
    const path = `${day}/${c.id}`;
    let fd: number;
    try {
      mkdirSync(join(this.snapshots.root, day), { recursive: true, mode: 0o700 });
      fd = openSync(this.file(path), 'wx', 0o600);
      writeWhole(fd, c.init);
      this.store.insertClip({
        id: c.id,
        monitor_id: c.monitorId,
        path,
        started_ms: c.startedAt,
        status: 'recording',
        bytes: c.init.length,
        duration_ms: 0,
        end_reason: null,
      });
    } catch (e) {
      this.failed(e, c.monitorId);
      this.snapshots.remove(path);
      return null;
    }
    this.counters.begun++;
    let bytes = c.init.length,
      ticks = 0,
      fragments = 0,
      open = true;
    const end = (reason: ClipEndReason) => {
      if (!open) return;
      open = false;
      let status: 'ready' | 'failed' = fragments > 0 ? 'ready' : 'failed';
      try {
        // The duration goes into the init segment (same length), so players show it before reading fragments.
        if (status === 'ready') writeSync(fd, initWithDuration(c.init, ticks), 0, c.init.length, 0);
      } catch (e) {
        this.failed(e, c.monitorId);
        status = 'failed';
      }
      closeSync(fd);
      if (status === 'failed') bytes = 0;
      try {
        this.store.updateClip({
          id: c.id,
          status,
          bytes,
          duration_ms: msOf(ticks, c.info),
          end_reason: reason,
        });
      } catch (e) {
        // The row stays recording: the next start recovers the file.
        this.log.error({ clip_id: c.id, err: (e as Error).message }, 'event clip could not be recorded as ended');
        return;
      }
      if (status === 'failed') this.snapshots.remove(path);
    };
    return {
      append: (data, t) => {
        if (!open) return false;
        if (this.storage?.isFull()) {
          this.counters.endedFull++;
          end('disk_full');
          return false;
        }
        try {
          writeWhole(fd, data);
        } catch (e) {
          // A fragment the disk took only part of is cut off (here, else by the next recovery): the clip
          // keeps what was whole.
          try {
            ftruncateSync(fd, bytes);
          } catch {
            /* recover() cuts it at start */
          }
          this.failed(e, c.monitorId);
          if (isStorageFull(e)) this.counters.endedFull++;
          end(isStorageFull(e) ? 'disk_full' : 'write_failed');
          return false;
        }
        bytes += data.length;
        ticks += t;
        fragments++;
        return true;
      },
      finish: end,
    };
  }

  /**
   * Startup: clips a crash left recording keep their whole fragments (the torn end is cut, the duration
   * written into the init segment) and become ready (end_reason recovered); those with none are failed.
   */
  recover(): number {
    let n = 0;
    for (const clip of this.store.recordingClips()) {
      let status: 'ready' | 'failed' = 'failed',
        bytes = 0,
        duration = 0;
      try {
        const fd = openSync(this.file(clip.path), 'r+');
        try {
          const size = fstatSync(fd).size;
          const buf = new Uint8Array(size);
          readSync(fd, buf, 0, size, 0);
          const scan = scanClip(buf);
          if (scan.info && scan.fragments > 0) {
            ftruncateSync(fd, scan.wholeBytes);
            const init = initWithDuration(buf.subarray(0, scan.initBytes), scan.mediaTicks);
            writeSync(fd, init, 0, init.length, 0);
            status = 'ready';
            bytes = scan.wholeBytes;
            duration = msOf(scan.mediaTicks, scan.info);
          }
        } finally {
          closeSync(fd);
        }
      } catch (e) {
        this.log.warn({ clip_id: clip.id, err: (e as Error).message }, 'event clip left by a crash could not be read');
      }
      this.store.updateClip({ id: clip.id, status, bytes, duration_ms: duration, end_reason: 'recovered' });
      if (status === 'failed') this.snapshots.remove(clip.path);
      n++;
    }
    if (n) this.log.info({ clips: n }, 'event clips left recording by the previous process recovered');
    return n;
  }

  private failed(e: unknown, monitorId: string): void {
    if (isStorageFull(e)) this.storage?.markFull(`an event clip could not be written: ${(e as { code: string }).code}`);
    this.log.warn({ monitor_id: monitorId, err: (e as Error).message }, 'event clip write failed');
  }
}
