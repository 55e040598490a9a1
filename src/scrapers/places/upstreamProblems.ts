/**
 * Recognising Google's refusals, which mostly arrive as a redirect or an HTML page where JSON was asked
 * for: the EU consent wall, the "unusual traffic" (/sorry/) page, and silent truncation (a later page that
 * only repeats what was already seen). Each becomes a typed problem, never an empty success. Pure.
 */
import { Errors, type ApiError } from '../../contract/errors.js';

export type BlockCode = 'consent_wall' | 'unusual_traffic';
/** A block page and the catalogue error it becomes. */
export interface Block {
  code: BlockCode;
  message: string;
  error: (message: string, details: Record<string, unknown>) => ApiError;
}

export interface UpstreamAnswer {
  status: number;
  location?: string | undefined;
  contentType?: string | undefined;
  body: string;
}

const CONSENT_HOST = /^https?:\/\/consent\.(?:google|youtube)\.[a-z.]+\//i;
const SORRY_PATH = /^(?:https?:\/\/[^/]+)?\/sorry\//i;
const UNUSUAL = /unusual traffic from your (?:computer )?network|\/sorry\/index|recaptcha\/api|g-recaptcha/i;

/** A consent wall or an "unusual traffic" page, from the status, redirect target and body; null when neither. */
export function detectBlock(a: UpstreamAnswer): Block | null {
  const location = a.location ?? '';
  if (a.status >= 300 && a.status < 400) {
    if (CONSENT_HOST.test(location)) return consent(`a redirect to ${new URL(location).host}`);
    if (SORRY_PATH.test(location)) return unusual('a redirect to the /sorry/ page');
  }
  const html = !(a.contentType ?? '').includes('json') && /^\s*(?:<!doctype|<html|<head|<body|<div)/i.test(a.body);
  if (a.status === 429) return unusual(`HTTP 429${UNUSUAL.test(a.body) ? ' with the "unusual traffic" page' : ''}`);
  if (html && UNUSUAL.test(a.body)) return unusual(`HTTP ${a.status} with the "unusual traffic" page`);
  if (html && /<base\s+href="https?:\/\/consent\.google\.|action="https?:\/\/consent\.google\./i.test(a.body))
    return consent('the consent page');
  return null;
}

const consent = (how: string): Block => ({
  code: Errors.consentWall.code,
  error: Errors.consentWall,
  message: `Google answered with its cookie consent wall (${how}) instead of results; set [scrapers.places] cookie to a SOCS consent cookie or use a non-EU egress.`,
});
const unusual = (how: string): Block => ({
  code: Errors.unusualTraffic.code,
  error: Errors.unusualTraffic,
  message: `Google flagged the traffic as unusual (${how}); requests pause for the cool-down. Lower requests_per_minute or use another proxy.`,
});

/**
 * Silent truncation of a search: a page after the first whose places were all seen before (Google
 * serving the same page again instead of the next one). A short or empty page is the normal end.
 */
export function isRepeatedPage(
  pageKeys: readonly string[],
  seenBefore: ReadonlySet<string>,
  pageIndex: number,
): boolean {
  return pageIndex > 0 && pageKeys.length > 0 && pageKeys.every((k) => seenBefore.has(k));
}
