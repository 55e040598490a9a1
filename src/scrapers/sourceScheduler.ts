import type { z } from 'zod';
import { Errors, isApiError } from '../contract/errors.js';
import type { RunProblemT, SourceReportT, StopReason } from './scrapeResult.js';

/** What the sink did with an item a source offered. */
export type Offer = 'added' | 'duplicate' | 'seen' | 'invalid' | 'full';

/**
 * One source's work as a lazy sequence of candidate items: the scheduler pulls the next one only when the
 * source may deliver more, and answers each `yield` with what became of the item (a post's comments are
 * only read once the post was added). The return value says why the source ended (default: exhausted).
 */
export type SourceWork = AsyncGenerator<unknown, StopReason | undefined, Offer | undefined>;

export const addFiltered = (report: SourceReportT, reason: string): void => {
  report.filtered[reason] = (report.filtered[reason] ?? 0) + 1;
};

export const addProblem = (report: SourceReportT, problem: RunProblemT): void => {
  (report.problems ??= []).push(problem);
};

/**
 * The items of one run: validated against the kind's item schema (an invalid record is dropped, reported
 * and never billed), de-duplicated by key, filtered against the keys the workspace already received
 * (only_new) and never beyond the limit.
 */
export class ItemSink {
  readonly items: unknown[] = [];
  private readonly keys = new Set<string>();

  constructor(
    readonly limit: number,
    private readonly keyOf: (item: unknown) => string,
    private readonly schema: z.ZodType,
    private readonly seenBefore: ReadonlySet<string> = new Set(),
  ) {}

  get full(): boolean {
    return this.items.length >= this.limit;
  }
  get remaining(): number {
    return Math.max(0, this.limit - this.items.length);
  }

  /** Whether the workspace was delivered an item with this key before (only_new). */
  deliveredBefore(key: string): boolean {
    return this.seenBefore.has(key);
  }

  /** Whether an item with this key would be added now (checked before expensive work such as reviews). */
  wouldAdd(key: string): boolean {
    return !this.full && !this.keys.has(key) && !this.seenBefore.has(key);
  }

  offer(candidate: unknown, report: SourceReportT): Offer {
    const parsed = this.schema.safeParse(candidate);
    if (!parsed.success) {
      addFiltered(report, 'invalid');
      const id = candidate as { id?: unknown; fid?: unknown; placeId?: unknown } | null;
      const name = [id?.id, id?.fid, id?.placeId].find((v): v is string => typeof v === 'string') ?? null;
      addProblem(
        report,
        Errors.invalidItem(
          name,
          parsed.error.issues.map((i) => `${i.path.join('.') || '(item)'}: ${i.message}`),
        ),
      );
      return 'invalid';
    }
    const key = this.keyOf(parsed.data);
    if (this.keys.has(key)) {
      addFiltered(report, 'duplicate');
      return 'duplicate';
    }
    if (this.seenBefore.has(key)) {
      addFiltered(report, 'seen');
      return 'seen';
    }
    if (this.full) return 'full';
    this.keys.add(key);
    this.items.push(parsed.data);
    return 'added';
  }
}

interface SourceState<S> {
  source: S;
  report: SourceReportT;
  work: SourceWork | null;
  pending: Offer | undefined;
}

/**
 * Runs the sources of one run with a fair share of the item budget each: in passes, every source still
 * running may add up to ceil(remaining / sources still running) items, so what one source does not use
 * (it ended, failed or was filtered away) goes to the others in the next pass. Sources are pulled one at
 * a time (one upstream request in flight per run), in request order within a pass.
 *
 * A source's ApiError becomes its problem (the items it delivered stay); a run-wide one (a block page,
 * refused credentials) fails every source that has not finished with the same problem instead of
 * hammering the upstream. An abort of `signal` (the run was cancelled) stops everything and keeps what
 * was delivered. Anything else (a bug) ends the run.
 */
export async function runSources<S extends { label: string }>(
  sources: S[],
  o: {
    sink: ItemSink;
    runWide: ReadonlySet<string>;
    signal: AbortSignal | undefined;
    /** What a full sink means for the sources it stopped: the request's max_items, or the quota below it. */
    limitReason: 'max_items' | 'quota';
    open: (source: S, report: SourceReportT) => SourceWork;
  },
): Promise<{ reports: SourceReportT[]; cancelled: boolean }> {
  const states: SourceState<S>[] = sources.map((source) => ({
    source,
    report: { source: source.label, status: 'not_started', items: 0, filtered: {}, problems: [] },
    work: null,
    pending: undefined,
  }));
  let active = [...states];
  let runWide: SourceReportT['problem'] | null = null;
  let cancelled = false;
  const finish = (st: SourceState<S>, reason: StopReason) => {
    st.report.stop_reason = reason;
    active = active.filter((a) => a !== st);
  };

  while (active.length > 0 && !o.sink.full && !runWide && !cancelled) {
    const share = Math.ceil(o.sink.remaining / active.length);
    for (const st of [...active]) {
      if (o.sink.full || runWide || cancelled) break;
      const take = Math.min(share, o.sink.remaining);
      let added = 0;
      try {
        if (!st.work) {
          st.report.status = 'ok';
          st.work = o.open(st.source, st.report);
        }
        while (added < take) {
          const next = await st.work.next(st.pending);
          st.pending = undefined;
          if (next.done) {
            finish(st, next.value ?? 'exhausted');
            break;
          }
          st.pending = o.sink.offer(next.value, st.report);
          if (st.pending === 'added') {
            added++;
            st.report.items++;
          }
        }
      } catch (e) {
        if (o.signal?.aborted) {
          cancelled = true;
          break;
        }
        if (!isApiError(e)) throw e;
        st.report.status = 'failed';
        st.report.problem = {
          code: e.code,
          message: e.message,
          ...(Object.keys(e.details).length ? { details: e.details } : {}),
        };
        finish(st, 'failed');
        if (o.runWide.has(e.code)) runWide = st.report.problem;
      }
    }
    if (o.signal?.aborted) cancelled = true;
  }

  for (const st of states) {
    if (st.report.stop_reason) continue;
    if (cancelled) {
      if (st.report.status === 'ok') st.report.status = 'cancelled';
      st.report.stop_reason = 'cancelled';
    } else if (runWide) {
      Object.assign(st.report, { status: 'failed', problem: runWide, stop_reason: 'failed' });
    } else {
      st.report.stop_reason = o.limitReason;
    }
  }
  // Suspended sources are closed so their `finally` blocks run; a cancelled run's are already aborting.
  await Promise.all(states.map((st) => st.work?.return(undefined).catch(() => undefined)));
  return { reports: states.map((st) => st.report), cancelled };
}
