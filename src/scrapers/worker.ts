/**
 * The scrape worker process (forked by ScrapeWorker at a raised nice value). It runs the scrapers and
 * holds their HTTP clients; SQLite, quotas and billing stay in the parent.
 */
import { join } from 'node:path';
import type { VigilConfig } from '../config/schema.js';
import { Errors, isApiError } from '../contract/errors.js';
import { DiagnosticSamples } from './diagnosticSamples.js';
import { scraperKind } from './kinds.js';
import type { ScrapeRunner } from './registry.js';
import type { WorkerReply, WorkerRequest } from './workerProtocol.js';

let config: VigilConfig | null = null;
let samples: DiagnosticSamples | null = null;
const runners = new Map<string, Promise<{ run: ScrapeRunner; close(): Promise<void> }>>();
/** The abort controllers of the runs in progress: a cancel aborts the run's upstream requests. */
const running = new Map<string, AbortController>();
const send = (m: WorkerReply) => process.send?.(m);

async function run(m: Extract<WorkerRequest, { type: 'run' }>): Promise<void> {
  const controller = new AbortController();
  running.set(m.id, controller);
  try {
    const kind = scraperKind(m.kind);
    let runner = runners.get(m.kind);
    if (!runner) {
      runner = kind.createRunner(config!);
      runners.set(m.kind, runner);
    }
    const outcome = await (
      await runner
    ).run(m.request, {
      limit: m.limit,
      reviewLimit: m.reviewLimit,
      signal: controller.signal,
      seen: new Set(m.seen),
      onWait: (at) => send({ type: 'waiting', id: m.id, resumeAt: at ? at.getTime() : null }),
      saveSample: (what, body) => samples?.save(what, body) ?? null,
    });
    send({ type: 'done', id: m.id, outcome });
  } catch (e) {
    const err = isApiError(e)
      ? { code: e.code, message: e.message, details: e.details }
      : { code: Errors.scrapeFailed.code, message: Errors.scrapeFailed((e as Error).message).message, details: {} };
    send({ type: 'error', id: m.id, error: err });
  } finally {
    running.delete(m.id);
  }
}

process.on('message', (m: WorkerRequest) => {
  if (m.type === 'init') {
    config = m.config;
    samples = new DiagnosticSamples(join(config.server.data_dir, 'scrape-samples'));
  } else if (m.type === 'run') void run(m);
  else if (m.type === 'cancel') running.get(m.id)?.abort(new Error('the run was cancelled'));
});
// The parent went away: nothing here is state worth keeping (runs are re-queued from SQLite).
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
