/**
 * Why one source could not provide a file. The installer records these and moves to the next source;
 * only when every source fails does it raise an ApiError listing them.
 */
export type SourceFailureKind =
  /** Unreachable, HTTP error, not found, timed out. */
  | 'unavailable'
  /** Bytes arrived but their SHA-256 or size is not the catalog's. */
  | 'mismatch'
  /** Over the byte cap for downloads or extracted members. */
  | 'too_large'
  /** Archive unreadable, member missing/ambiguous/symlink. */
  | 'bad_archive';

export class SourceError extends Error {
  constructor(
    readonly kind: SourceFailureKind,
    message: string,
  ) {
    super(redactSecrets(message));
    this.name = 'SourceError';
  }
}

/** Strips `user:pass@` from anything URL-shaped, so reasons can be shown and logged. */
export function redactSecrets(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, '$1');
}

/** A URL as safe to print: no credentials, no query (signed URLs carry tokens there). */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return redactSecrets(url);
  }
}
