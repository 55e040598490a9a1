/**
 * The one error type of the service. Anything (routes, services, the engine, the installer) throws it;
 * the HTTP layer shapes it once into the `{error:{code,message,details},request_id}` envelope and the
 * CLI prints `code: message`. Services never know about Koa.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown>;
  /** Extra response headers (e.g. WWW-Authenticate on 401). */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string,
    message: string,
    details: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.headers = headers;
  }
}

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;

/** Error messages that are part of the wire contract (kept verbatim from the upstream service). */
export const Messages = {
  faceNotFound: 'No usable face was detected.',
  invalidImage: 'Only JPEG, PNG, WebP, and BMP images are supported.',
  internal: 'The server could not complete the request.',
} as const;
