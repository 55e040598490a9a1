import type { VigilConfig } from '../config/schema.js';
import type { ScrapeOutcome } from './scrapeResult.js';

export type WorkerRequest =
  | { type: 'init'; config: VigilConfig }
  | { type: 'run'; id: string; kind: string; request: unknown; limit: number; reviewLimit: number };

export type WorkerReply =
  | { type: 'ready' }
  | { type: 'done'; id: string; outcome: ScrapeOutcome }
  | { type: 'error'; id: string; error: { code: string; message: string; details: Record<string, unknown> } };
