/**
 * A minimal HTTP/1.1 keep-alive client for the benches: one connection, one request at a time, the
 * request's bytes built once and written in one call, the response read to its Content-Length. The
 * benches' clients share the daemon's cores (on a site they are other machines on the LAN), so what they
 * spend is taken from the daemon: node:http costs ~0.65-0.75 ms of CPU per photo in bench/inference.ts's
 * four-client runs, this ~0.3 (docs/development/decisions.md, "Inference"). Responses without Content-Length (chunked)
 * are refused: the daemon's JSON answers always carry it.
 */
import net from 'node:net';

export interface KeepAliveResponse {
  status: number;
  body: Buffer;
}

/** The bytes of one POST: request line, headers (Host and Content-Length added) and body. */
export function postRequest(url: URL, path: string, headers: Record<string, string>, body: Buffer): Buffer {
  const lines = [
    `POST ${path} HTTP/1.1`,
    `Host: ${url.host}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    `Content-Length: ${body.length}`,
    'Connection: keep-alive',
  ];
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** Status and Content-Length of a response head (the bytes before the blank line), or why it is unusable. */
export function parseResponseHead(head: string): { status: number; length: number } {
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  if (!status) throw new Error(`not an HTTP/1.x response: ${JSON.stringify(head.slice(0, 40))}`);
  if (/\r\ntransfer-encoding:/i.test(head)) throw new Error('chunked responses are not supported by the bench client');
  const length = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (!length) throw new Error('response without Content-Length');
  return { status: Number(status[1]), length: Number(length[1]) };
}

export class KeepAliveClient {
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private waiting: { resolve: (r: KeepAliveResponse) => void; reject: (e: Error) => void } | null = null;
  private failed: Error | null = null;

  private constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (c: Buffer) => {
      this.buffered.push(c);
      this.bufferedBytes += c.length;
      this.tryComplete();
    });
    const fail = (e: Error) => {
      this.failed ??= e;
      this.waiting?.reject(e);
      this.waiting = null;
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed by the server')));
  }

  static connect(url: URL): Promise<KeepAliveClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: url.hostname, port: Number(url.port) }, () => {
        socket.off('error', reject);
        resolve(new KeepAliveClient(socket));
      });
      socket.once('error', reject);
    });
  }

  /** Sends `request` (see postRequest) and resolves with the whole response. */
  send(request: Buffer): Promise<KeepAliveResponse> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.waiting) return Promise.reject(new Error('one request at a time'));
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(request);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private tryComplete(): void {
    if (!this.waiting) return;
    const all = this.buffered.length === 1 ? this.buffered[0]! : Buffer.concat(this.buffered, this.bufferedBytes);
    this.buffered = [all];
    const end = all.indexOf('\r\n\r\n');
    if (end < 0) return;
    let head: { status: number; length: number };
    try {
      head = parseResponseHead(all.toString('latin1', 0, end));
    } catch (e) {
      this.waiting.reject(e as Error);
      this.waiting = null;
      this.close();
      return;
    }
    const total = end + 4 + head.length;
    if (all.length < total) return;
    const { resolve } = this.waiting;
    this.waiting = null;
    this.buffered = all.length > total ? [all.subarray(total)] : [];
    this.bufferedBytes = all.length - total;
    resolve({ status: head.status, body: all.subarray(end + 4, total) });
  }
}
