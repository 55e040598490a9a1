import test from 'ava';
import { connect } from 'node:net';
import { startTestDaemon } from '../helpers/daemon.js';

/** Sends one request on the open socket and resolves with the raw response head. */
function request(socket: ReturnType<typeof connect>, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(buf)?.[1] ?? 0);
      if (buf.length < end + 4 + length) return;
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(buf.slice(0, end));
    };
    const onClose = () => reject(new Error(`the server closed the connection (got ${JSON.stringify(buf)})`));
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: vigil\r\n\r\n`);
  });
}

test('idle keep-alive: 5 s advertised, the connection still open past it, so a client that reuses it at the limit never gets a reset', async (t) => {
  const d = await startTestDaemon();
  const { port } = new URL(d.url);
  const socket = connect(Number(port), '127.0.0.1');
  try {
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const first = await request(socket, '/v1/health');
    t.regex(first, /^HTTP\/1\.1 200/);
    t.regex(first, /\r\nKeep-Alive: timeout=5(\r\n|$)/i);
    t.regex(first, /\r\nConnection: keep-alive(\r\n|$)/i);
    // Past the advertised time (a client's coarse timer can be this late): the same socket still works.
    await new Promise((r) => setTimeout(r, 6_000));
    t.regex(await request(socket, '/v1/health'), /^HTTP\/1\.1 200/);
  } finally {
    socket.destroy();
    await d.close();
  }
});
