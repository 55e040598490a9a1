import { cpus } from 'node:os';
import { Errors, isApiError } from '../contract/errors.js';
import { decodeImage, type DecodedImage, type DecodeLimits } from './image.js';
import { ConcurrencyLimiter } from './limiter.js';

export interface DecodeStageOptions {
  /** Decodes at once (sharp runs them on libuv's thread pool); default: the core count, at least 2. */
  concurrency?: number;
  /** [server] image_decode_timeout_seconds, in ms: sharp stops a decode that runs longer. */
  timeoutMs: number;
  /** [server] max_image_side and max_image_aspect_ratio, checked from the header. */
  maxSide: number;
  maxAspectRatio: number;
}

/**
 * Image decoding as its own stage, in front of the inference limiter: a request's image is decoded
 * (bounded by shape before and by time during the decode) while the inference workers run other
 * requests' models, so one slow image never holds an inference slot, and decode overlaps inference.
 *
 * Cancellation: a decode still queued here leaves the queue when its request's signal fires (deadline
 * or client gone) and never starts. One already running in libvips cannot be interrupted from outside;
 * its caller is released at once, and the stage slot stays taken until sharp's own timeout stops it,
 * so abandoned work is bounded by `concurrency` x `timeoutMs` and never piles up.
 */
export class DecodeStage {
  private readonly limiter: ConcurrencyLimiter;
  private abandoned = 0;
  private timedOut = 0;

  constructor(private readonly options: DecodeStageOptions) {
    this.limiter = new ConcurrencyLimiter(options.concurrency ?? Math.max(2, cpus().length));
  }

  async decode(bytes: Uint8Array, limits: DecodeLimits, signal?: AbortSignal): Promise<DecodedImage> {
    const release = await this.limiter.acquire(signal);
    if (signal?.aborted) {
      release();
      throw abortReason(signal);
    }
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const work = decodeImage(buf, this.limits(limits))
      .catch((e: unknown) => {
        this.noteFailure(e);
        throw e;
      })
      .finally(release);
    if (!signal) return work;
    return new Promise<DecodedImage>((resolve, reject) => {
      const onAbort = () => {
        this.abandoned++;
        work.catch(() => undefined); // finishes (or times out) in the background; its slot is released then
        reject(abortReason(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /** The [server] shape and time limits, with a request's own on top: what any decode of an upload applies. */
  limits(limits: DecodeLimits): DecodeLimits {
    return {
      maxSide: this.options.maxSide,
      maxAspectRatio: this.options.maxAspectRatio,
      timeoutMs: this.options.timeoutMs,
      ...limits,
    };
  }

  /** Counts a decode that sharp stopped at the time limit, here or in an inference worker (decodes_timed_out). */
  noteFailure(e: unknown): void {
    if (isApiError(e) && e.details.reason === 'decode_timeout') this.timedOut++;
  }

  stats(): {
    decode_concurrency: number;
    decoding: number;
    decode_waiting: number;
    decodes_abandoned: number;
    decodes_timed_out: number;
  } {
    const s = this.limiter.stats();
    return {
      decode_concurrency: s.max_concurrency,
      decoding: s.active,
      decode_waiting: s.waiting,
      decodes_abandoned: this.abandoned,
      decodes_timed_out: this.timedOut,
    };
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason instanceof Error ? signal.reason : Errors.requestTimeout();
}
