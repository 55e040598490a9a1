import type { VigilConfig } from '../config/schema.js';
import type { ScrapeOutcome } from './scrapeResult.js';

export type WorkerRequest =
  | { type: 'init'; config: VigilConfig }
  /** `seen`: item keys the workspace was delivered before (only_new runs), else empty. */
  | { type: 'run'; id: string; kind: string; request: unknown; limit: number; reviewLimit: number; seen: string[] }
  /** Stop the run at its next upstream request; it answers `done` with what it delivered. */
  | { type: 'cancel'; id: string };

export type WorkerReply =
  | { type: 'ready' }
  | { type: 'done'; id: string; outcome: ScrapeOutcome }
  | { type: 'error'; id: string; error: { code: string; message: string; details: Record<string, unknown> } }
  /** The run waits for the upstream's rate limit until `resumeAt` (ms since epoch); null: it goes on. */
  | { type: 'waiting'; id: string; resumeAt: number | null };
