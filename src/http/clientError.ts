import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type ApiError, Errors } from '../contract/errors.js';

/** The catalogue error for what Node's HTTP parser (or its timers) refused before any route ran. */
export function parserError(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return Errors.headersTooLarge();
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return Errors.requestHeaderTimeout();
    default:
      return Errors.malformedHttpRequest(code ?? 'unknown');
  }
}

/**
 * Replies to requests Node's HTTP parser rejects (bad method, raw bytes in the path or a header, huge
 * headers, a broken chunked encoding, headers that never finish) in the same `{error, request_id}`
 * envelope as every other error, with the right status, then closes the connection: after a parse
 * error nothing more on it can be trusted. A socket already gone or mid-response is just destroyed.
 */
export function replyToClientErrors(server: Server, log: Logger): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const busy = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (err.code === 'ECONNRESET' || !socket.writable || busy) {
      socket.destroy();
      return;
    }
    const api = parserError(err.code);
    const requestId = randomUUID();
    log.info(
      { request_id: requestId, status: api.status, code: api.code, reason: err.code },
      'request refused by the HTTP parser',
    );
    const body = JSON.stringify({
      error: { code: api.code, message: api.message, details: api.details },
      request_id: requestId,
    });
    const head = [
      `HTTP/1.1 ${api.status} ${STATUS_CODES[api.status] ?? 'Error'}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `x-request-id: ${requestId}`,
      'X-Content-Type-Options: nosniff',
      'Connection: close',
      ...Object.entries(api.headers).map(([k, v]) => `${k}: ${v}`),
    ].join('\r\n');
    socket.end(`${head}\r\n\r\n${body}`);
  });
}
