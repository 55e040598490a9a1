import pg from 'pg';
import { clientConfig, type PgOptions } from './postgres.js';

export interface PgListenerHooks {
  /** Runs on a fresh connection before LISTEN (e.g. pending migrations); throwing counts as a failed connect. */
  beforeListen?: () => Promise<void>;
  /** Runs once LISTEN is active: catch up what was missed while not listening. Throwing counts as a failed connect. */
  onListening?: () => Promise<void> | void;
  onNotification: (payload: string) => void;
  /** The connection failed or was lost; a reconnect is scheduled. */
  onLost?: (e: unknown) => void;
}

/**
 * One dedicated PostgreSQL connection that LISTENs on a channel and reconnects every `reconnectMs` after
 * a failure or loss (pooled connections cannot LISTEN: they are handed to other queries).
 * `listening` is true only between a successful `onListening` and the next loss, so callers can trust
 * what they learn from notifications only while it is true.
 */
export class PgListener {
  private client: pg.Client | null = null;
  private reconnect: NodeJS.Timeout | null = null;
  private closed = false;
  /** Increments on every successful connection: callers compare it to tell one connection from the next. */
  epoch = 0;

  constructor(
    private readonly options: PgOptions,
    private readonly channel: string,
    private readonly hooks: PgListenerHooks,
    private readonly reconnectMs = 1000,
  ) {}

  get listening(): boolean {
    return this.client !== null;
  }

  /** Connects once (resolves when connected or failed; never throws); reconnects by itself afterwards. */
  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client(clientConfig(this.options));
    const lost = (e?: unknown) => {
      if (this.client !== client) return;
      this.client = null;
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      this.hooks.onLost?.(e ?? new Error('connection ended'));
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await this.hooks.beforeListen?.();
      await client.query(`LISTEN ${this.channel}`);
      client.on('notification', (m) => {
        if (m.payload) this.hooks.onNotification(m.payload);
      });
      this.client = client;
      this.epoch++;
      await this.hooks.onListening?.();
    } catch (e) {
      client.removeAllListeners();
      client.on('error', () => undefined);
      void client.end().catch(() => undefined);
      if (this.client === client) this.client = null;
      this.hooks.onLost?.(e);
      this.scheduleReconnect();
    }
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnect) return;
    this.reconnect = setTimeout(() => {
      this.reconnect = null;
      void this.connect();
    }, this.reconnectMs);
    this.reconnect.unref();
  }
}
