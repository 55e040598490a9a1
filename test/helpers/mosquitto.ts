import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from './shared.js';
import { fileTempDir } from './tempDir.js';

/** Debian's mosquitto; VIGIL_MOSQUITTO overrides the path. */
export const MOSQUITTO = process.env.VIGIL_MOSQUITTO ?? '/usr/sbin/mosquitto';

export interface Broker {
  port: number;
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  running(): boolean;
}

/**
 * A real Mosquitto broker on a loopback port, started the way users start it (a config file), with
 * persistence in a temp dir so persistent sessions (clean=false subscribers) and retained messages
 * survive a stop/start on the same port. The dir is removed when the test process exits.
 */
export async function startMosquitto(): Promise<Broker> {
  const dir = fileTempDir('vigil-mqtt-');
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      'persistence true',
      `persistence_location ${dir}/`,
      'autosave_interval 1',
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      'max_queued_messages 100000',
      'max_inflight_messages 100',
    ].join('\n'),
  );
  let child: ChildProcess | null = null;
  let out = '';
  const start = async () => {
    const c = spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    c.stderr!.on('data', (b: Buffer) => {
      out += b.toString();
    });
    // Ready when the port accepts connections.
    for (let i = 0; i < 100; i++) {
      if (c.exitCode !== null) throw new Error(`mosquitto exited: ${out}`);
      const ok = await new Promise<boolean>((resolve) => {
        const sock = connect(port, '127.0.0.1');
        sock.once('connect', () => {
          sock.destroy();
          resolve(true);
        });
        sock.once('error', () => resolve(false));
      });
      if (ok) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`mosquitto did not listen: ${out}`);
  };
  const stop = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGTERM'); // saves the persistence file
    await exited;
  };
  await start();
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    stop,
    start,
    running: () => child !== null && child.exitCode === null && child.signalCode === null,
  };
}
