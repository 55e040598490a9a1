/**
 * Monitor source URLs. They may carry camera credentials, so the API only ever returns the redacted
 * form `scheme://host[:port]/path` (no user info, no query) and the full URL lives encrypted at rest.
 */

/** `scheme://host[:port]/path`: user info and query removed, IPv6 hosts bracketed, scheme lowercased. */
export function redactRtspUrl(raw: string): string {
  const url = new URL(raw);
  // WHATWG URL keeps IPv6 hosts bracketed in `hostname` for non-special schemes such as rtsp.
  const name = url.hostname.toLowerCase();
  const host = name.includes(':') && !name.startsWith('[') ? `[${name}]` : name;
  return `${url.protocol}//${host}${url.port ? `:${url.port}` : ''}${url.pathname}`;
}

/** Whether the URL carries credentials (logged as a boolean, never the values). */
export const hasCredentials = (raw: string): boolean => {
  const url = new URL(raw);
  return url.username !== '' || url.password !== '';
};
