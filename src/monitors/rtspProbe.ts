import { createHash, randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

import type { RtspCause } from '../contract/monitors.js';

export type { RtspCause };

export type ProbeResult =
  /**
   * The server answered DESCRIBE with a video stream (or with something the pipeline should judge itself).
   * `codec`: the SDP's encoding name of the first video stream (H264, H265, ...) when the answer had an SDP.
   */
  { ok: true; codec?: string | null } | { ok: false; cause: RtspCause; detail: string };

/** The encoding name (rtpmap) of the first video media of an SDP, upper-cased; null when it has none. */
export function sdpVideoCodec(sdp: string): string | null {
  const lines = sdp.split(/\r?\n/);
  const m = lines.findIndex((l) => l.startsWith('m=video '));
  if (m === -1) return null;
  const pt = lines[m]!.split(' ')[3];
  for (let i = m + 1; i < lines.length && !lines[i]!.startsWith('m='); i++) {
    const map = /^a=rtpmap:(\d+) ([^/\s]+)/.exec(lines[i]!);
    if (map && map[1] === pt) return map[2]!.toUpperCase();
  }
  return null;
}

/** Bytes of a DESCRIBE reply read at most (headers and SDP). */
const MAX_REPLY = 64 * 1024;

/**
 * Asks the source what GStreamer would find out slowly: a name lookup, a TCP (or TLS) connect and one
 * RTSP DESCRIBE. rtspsrc reports these on its bus, which this addon cannot watch without parking a libuv
 * thread per monitor, so the monitor only saw "no frame within 5 s". The probe costs one round trip,
 * holds no session (no SETUP), and answers:
 * - `host_not_found` (DNS), `connection_refused` (nobody listens), `timeout` (no answer in time),
 * - `not_rtsp` (the reply is not RTSP: an HTTP server, garbage bytes, a closed connection),
 * - `not_found` (404), `unauthorized` (401/403, after answering a Basic or Digest challenge with the
 *   URL's credentials when it has some), `no_video` (the SDP has no video media).
 * Anything else (a 5xx, an odd reply) is `ok`: the pipeline tries and its own timeouts decide.
 * Credentials are only sent over plain rtsp:// (as the pipeline sends them); over rtsps:// the probe does
 * not verify the certificate (the pipeline's template decides that), so it never sends them there.
 */
export async function probeRtsp(raw: string, timeoutMs: number): Promise<ProbeResult> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, cause: 'not_found', detail: 'the URL is not valid' };
  }
  const tls = url.protocol.toLowerCase() === 'rtsps:';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port) || (tls ? 322 : 554);
  const deadline = Date.now() + timeoutMs;
  let address: string;
  try {
    address = (await withTimeout(lookup(host), timeoutMs)).address;
  } catch (e) {
    if (e === TIMEOUT)
      return { ok: false, cause: 'timeout', detail: `the name ${host} did not resolve within ${timeoutMs / 1000} s` };
    return {
      ok: false,
      cause: 'host_not_found',
      detail: `the host name ${host} does not resolve (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
    };
  }
  const user = decodeURIComponent(url.username),
    pass = decodeURIComponent(url.password);
  const target = `${url.protocol}//${url.host.replace(/^.*@/, '')}${url.pathname}${url.search}`;
  const first = await describe({ address, host, port, tls, target, deadline, authorization: null });
  if ('cause' in first) return first;
  let reply = first;
  if (reply.status === 401 && (user || pass) && !tls) {
    const authorization = answerChallenge(reply.headers['www-authenticate'] ?? '', user, pass, target);
    if (!authorization) return { ok: true }; // a scheme the probe does not speak: the pipeline decides
    const second = await describe({ address, host, port, tls, target, deadline, authorization });
    if ('cause' in second) return second;
    reply = second;
  }
  if (reply.status === 401 || reply.status === 403) {
    if (tls && (user || pass)) return { ok: true }; // credentials are left to the pipeline over rtsps
    return {
      ok: false,
      cause: 'unauthorized',
      detail:
        user || pass
          ? `the camera refused the credentials (RTSP ${reply.status})`
          : `the camera asks for credentials (RTSP ${reply.status})`,
    };
  }
  if (reply.status === 404)
    return { ok: false, cause: 'not_found', detail: `the camera has no stream at ${url.pathname || '/'} (RTSP 404)` };
  if (reply.status === 200 && /^v=0/m.test(reply.body) && !/^m=video /m.test(reply.body)) {
    return { ok: false, cause: 'no_video', detail: 'the stream has no video track' };
  }
  return { ok: true, codec: reply.status === 200 ? sdpVideoCodec(reply.body) : null };
}

const TIMEOUT = Symbol('timeout');
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(TIMEOUT), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function describe(o: {
  address: string;
  host: string;
  port: number;
  tls: boolean;
  target: string;
  deadline: number;
  authorization: string | null;
}): Promise<Reply | { ok: false; cause: RtspCause; detail: string }> {
  return new Promise((resolve) => {
    const left = Math.max(1, o.deadline - Date.now());
    let done = false;
    let data = Buffer.alloc(0);
    const finish = (r: Reply | { ok: false; cause: RtspCause; detail: string }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(
      () =>
        finish(
          data.length === 0
            ? {
                ok: false,
                cause: 'timeout',
                detail: `no RTSP answer from ${o.host}:${o.port} within ${Math.round(left) / 1000} s`,
              }
            : { ok: false, cause: 'not_rtsp', detail: 'the server sent an incomplete reply that is not RTSP' },
        ),
      left,
    );
    const request = [
      `DESCRIBE ${o.target} RTSP/1.0`,
      'CSeq: 1',
      'Accept: application/sdp',
      'User-Agent: Vigil',
      ...(o.authorization ? [`Authorization: ${o.authorization}`] : []),
      '',
      '',
    ].join('\r\n');
    const socket: Socket = o.tls
      ? tlsConnect(
          {
            host: o.address,
            port: o.port,
            servername: /^[\d.:]+$/.test(o.host) ? undefined : o.host,
            rejectUnauthorized: false,
          },
          () => socket.write(request),
        )
      : netConnect({ host: o.address, port: o.port }, () => socket.write(request));
    socket.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'ECONNREFUSED')
        finish({
          ok: false,
          cause: 'connection_refused',
          detail: `nothing accepts connections on ${o.host}:${o.port}`,
        });
      else if (e.code === 'ETIMEDOUT' || e.code === 'EHOSTUNREACH' || e.code === 'ENETUNREACH')
        finish({ ok: false, cause: 'timeout', detail: `${o.host}:${o.port} cannot be reached (${e.code})` });
      // A reset before any byte: a server going down (or a firewall), not one speaking another protocol.
      else if (data.length === 0 && (e.code === 'ECONNRESET' || e.code === 'EPIPE'))
        finish({ ok: false, cause: 'connection_refused', detail: `${o.host}:${o.port} reset the connection` });
      else finish({ ok: false, cause: 'not_rtsp', detail: `the connection failed: ${e.message}` });
    });
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (!/^RTSP\/1\.\d /.test(data.subarray(0, 9).toString('latin1')) && data.length >= 9) {
        finish({
          ok: false,
          cause: 'not_rtsp',
          detail: `the server does not speak RTSP (it answered "${printable(data.subarray(0, 40))}")`,
        });
        return;
      }
      const parsed = parseReply(data);
      if (parsed) finish(parsed);
      else if (data.length > MAX_REPLY) finish({ ok: false, cause: 'not_rtsp', detail: 'the RTSP reply is too long' });
    });
    socket.on('end', () =>
      finish(
        data.length === 0
          ? { ok: false, cause: 'not_rtsp', detail: 'the server closed the connection without an RTSP reply' }
          : (parseReply(data, true) ?? {
              ok: false,
              cause: 'not_rtsp',
              detail: `the server does not speak RTSP (it answered "${printable(data.subarray(0, 40))}")`,
            }),
      ),
    );
  });
}

function printable(b: Buffer): string {
  return b.toString('latin1').replace(/[^\x20-\x7e]/g, '.');
}

/** A complete reply (status line, headers, Content-Length body), or null while more is needed. */
function parseReply(data: Buffer, ended = false): Reply | null {
  const text = data.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = text.slice(0, end).split('\r\n');
  const m = /^RTSP\/1\.\d (\d{3})/.exec(lines[0]!);
  if (!m) return null;
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] ??= line.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0) || 0;
  const body = data.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  if (body.length < length && !ended) return null;
  return { status: Number(m[1]), headers, body: body.subarray(0, length).toString('utf8') };
}

/** The Authorization header answering a Basic or Digest (MD5) challenge, or null for another scheme. */
export function answerChallenge(challenge: string, user: string, pass: string, uri: string): string | null {
  if (/^basic\b/i.test(challenge)) return `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  if (!/^digest\b/i.test(challenge)) return null;
  const params: Record<string, string> = {};
  for (const m of challenge.slice(6).matchAll(/(\w+)=(?:"([^"]*)"|([^,\s]*))/g))
    params[m[1]!.toLowerCase()] = m[2] ?? m[3] ?? '';
  const md5 = (s: string) => createHash('md5').update(s).digest('hex');
  const realm = params.realm ?? '',
    nonce = params.nonce ?? '';
  const ha1 = md5(`${user}:${realm}:${pass}`),
    ha2 = md5(`DESCRIBE:${uri}`);
  if (params.qop && /\bauth\b/.test(params.qop)) {
    const cnonce = randomBytes(8).toString('hex'),
      nc = '00000001';
    const response = md5(`${ha1}:${nonce}:${nc}:${cnonce}:auth:${ha2}`);
    return `Digest username="${user}", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", qop=auth, nc=${nc}, cnonce="${cnonce}"${params.opaque ? `, opaque="${params.opaque}"` : ''}`;
  }
  return `Digest username="${user}", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${md5(`${ha1}:${nonce}:${ha2}`)}"${params.opaque ? `, opaque="${params.opaque}"` : ''}`;
}
