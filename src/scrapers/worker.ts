/**
 * The scrape worker process (forked by ScrapeWorker at a raised nice value). It runs the scrapers and
 * holds their HTTP clients; SQLite, quotas and billing stay in the parent.
 */
import type { VigilConfig } from '../config/schema.js';
import { Errors, isApiError } from '../contract/errors.js';
import { scraperKind } from './kinds.js';
import type { ScrapeRunner } from './registry.js';
import type { WorkerReply, WorkerRequest } from './workerProtocol.js';

let config: VigilConfig | null = null;
const runners = new Map<string, Promise<{ run: ScrapeRunner; close(): Promise<void> }>>();
const send = (m: WorkerReply) => process.send?.(m);

async function run(m: Extract<WorkerRequest, { type: 'run' }>): Promise<void> {
  try {
    const kind = scraperKind(m.kind);
    let runner = runners.get(m.kind);
    if (!runner) {
      runner = kind.createRunner(config!);
      runners.set(m.kind, runner);
    }
    const outcome = await (await runner).run(m.request, { limit: m.limit, reviewLimit: m.reviewLimit, signal: new AbortController().signal });
    send({ type: 'done', id: m.id, outcome });
  } catch (e) {
    const err = isApiError(e) ? { code: e.code, message: e.message, details: e.details } : { code: Errors.scrapeFailed.code, message: Errors.scrapeFailed((e as Error).message).message, details: {} };
    send({ type: 'error', id: m.id, error: err });
  }
}

process.on('message', (m: WorkerRequest) => {
  if (m.type === 'init') config = m.config;
  else if (m.type === 'run') void run(m);
});
// The parent went away: nothing here is state worth keeping (runs are re-queued from SQLite).
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
