import type { z } from 'zod';
import type { VigilConfig } from '../config/schema.js';
import type { ScrapeOutcome } from './scrapeResult.js';

/** What a runner gets besides its request, in the worker process. */
export interface RunContext {
  /** The quota-capped item limit. */
  limit: number;
  /** The quota-capped review units (0 for kinds without reviews). */
  reviewLimit: number;
  /** Aborted when the run is cancelled: the runner stops and returns what it delivered. */
  signal: AbortSignal;
  /** Item keys delivered to the workspace before (only_new); empty otherwise. */
  seen: ReadonlySet<string>;
  /** A long upstream wait started (its end) or ended (null): the run shows waiting_for_rate_limit. */
  onWait: (resumeAt: Date | null) => void;
  /** Keeps a copy of an upstream document the scraper did not understand; returns its file name. */
  saveSample: (what: string, body: string) => string | null;
}

/** Runs one request of a kind inside the worker process. */
export type ScrapeRunner = (request: unknown, ctx: RunContext) => Promise<ScrapeOutcome>;

/**
 * A scraper kind: everything the REST routes, the MCP tools, metering and the worker need to know.
 * Adding a kind (places) is one entry here; the queue, billing and MCP code stay as they are.
 */
export interface ScraperKind {
  kind: string;
  /** Canonical (dotted) MCP tool name; the advertised one replaces dots with underscores by default. */
  toolName: string;
  title: string;
  description: string;
  request: z.ZodType;
  item: z.ZodType;
  /** The most items a request may return (the quota reserved up front). */
  maxItems(request: unknown): number;
  /** Identity of an item for de-duplication and billing. */
  itemKey(item: unknown): string;
  /**
   * Kinds that also deliver reviews (places): the most review units a request may use (reserved up
   * front, like maxItems) and the reviews an item carries (what is billed). Absent: no review units.
   */
  maxReviews?(request: unknown): number;
  reviewCount?(item: unknown): number;
  /** Request checks beyond the schema that must fail before a run is accepted (400s). */
  preflight(request: unknown): void;
  /** Deployment readiness (credentials...) checked before a run is accepted (503 when missing). */
  checkConfigured(config: VigilConfig): void;
  /** Loaded in the worker process only. */
  createRunner(config: VigilConfig): Promise<{ run: ScrapeRunner; close(): Promise<void> }>;
}

const kinds = new Map<string, ScraperKind>();

export function registerScraperKind(k: ScraperKind): void {
  kinds.set(k.kind, k);
}

export function scraperKind(kind: string): ScraperKind {
  const k = kinds.get(kind);
  if (!k) throw new Error(`unknown scraper kind ${kind}`);
  return k;
}

export const scraperKinds = (): ScraperKind[] => [...kinds.values()];
