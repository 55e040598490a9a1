import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { MqttStatusT } from '../contract/events.js';
import type { MonitorT } from '../contract/monitors.js';
import type { Db } from '../store/database.js';
import type { HistoryOutput } from './eventHistory.js';
import { eventView } from './eventView.js';
import {
  boxDiscovery,
  haId,
  homeAssistantStatusTopic,
  monitorDiscovery,
  monitorDiscoveryTopics,
  staleDiscoveryTopics,
  topics,
  zoneConfigTopic,
  type DiscoveryContext,
} from './homeAssistant.js';
import type { HistoryStore, StoredEvent } from './historyStore.js';

export interface MqttOptions {
  url: string;
  username?: string | undefined;
  password?: string | undefined;
  clientId?: string | undefined;
  topicPrefix: string;
  qos: 0 | 1 | 2;
  retain: boolean;
  caFile?: string | undefined;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  tlsVerify: boolean;
  discovery: boolean;
  discoveryPrefix: string;
  snapshots: boolean;
  queueMaxMessages: number;
  reconnectDelayMs: number;
  maxReconnectDelayMs: number;
  keepaliveSeconds: number;
}

/** Who is in front of one monitor now (from its events), as the retained state topic shows it. */
interface Presence {
  epoch: string | null;
  /** track id -> person */
  tracks: Map<string, { id: string; name: string | null; since: string }>;
  unknownTracks: Set<string>;
  lastPerson: { id: string; name: string | null; at: string } | null;
  /** zone -> track id -> the person (null: an unknown face), from zone_enter / zone_exit. */
  zones: Map<string, Map<string, { id: string | null; name: string | null; since: string }>>;
}

const WINDOW = 64;
const DROPPED = 'mqtt_dropped';
/** How often the presence topics of deleted persons are looked for (rows their delete's trigger wrote). */
const CLEAR_INTERVAL_MS = 2000;

/** The MQTT part of /v1/events/status while [mqtt] is off. */
export function mqttOffStatus(topicPrefix: string): MqttStatusT {
  return {
    enabled: false,
    connected: false,
    broker: null,
    client_id: null,
    topic_prefix: topicPrefix,
    queued: 0,
    queue_max_messages: 0,
    dropped: 0,
    published: 0,
    last_error: null,
    connected_since: null,
    discovery: false,
  };
}

/** The broker URL without credentials. */
export function redactBrokerUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//');
  }
}

/**
 * MQTT output. Every message goes through a durable queue in SQLite (`mqtt_queue`), written in the same
 * transaction as the history rows, and is deleted only when the broker has acknowledged it (QoS 1/2), so
 * while the broker is away events wait on disk and are published in order when it returns (at least
 * once). The queue is bounded (`queue_max_messages`): when full the oldest messages are dropped, counted
 * (`dropped`, kept across restarts) and logged. Retained topics (state, presence, snapshot) keep only their
 * newest queued value. Availability has a last will; Home Assistant discovery is re-published on every
 * connect and when Home Assistant says it restarted (`<discovery_prefix>/status` = online).
 */
export class MqttPublisher implements HistoryOutput {
  private client: MqttClient | null = null;
  private connected = false;
  private connectedSince: string | null = null;
  private lastError: string | null = null;
  private closed = false;
  private draining = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private backoffMs: number;
  private queued: number;
  private published = 0;
  private dropped: number;
  private lastDropLog = 0;
  private readonly presence = new Map<string, Presence>();
  /** Monitors deleted while this process runs: their topics are cleared, later events of them are not published. */
  private readonly deletedMonitors = new Set<string>();
  /** `<monitor>\0<zone>` of zones removed while this process runs: their late events publish nothing. */
  private readonly removedZones = new Set<string>();
  /** Monitors whose motion is on now. */
  private readonly moving = new Set<string>();
  /** Persons shown present when the last process stopped (read before this process writes any event). */
  private readonly presentAtBoot: { monitor_id: string; person_id: string }[];
  private clearTimer: NodeJS.Timeout | null = null;
  /** Rejects when the current connection closes, so a window waiting for acknowledgements gives up. */
  private lost: Promise<never> = new Promise<never>(() => undefined);
  private markLost: (e: Error) => void = () => undefined;
  private ctx!: DiscoveryContext;
  private t!: ReturnType<typeof topics>;
  clientId!: string;
  private started = false;
  /** Called after the broker acknowledged queued messages (the bench measures latency with it). */
  onPublished: ((topics: string[]) => void) | null = null;

  /**
   * `enabled` false: the publisher keeps the presence of every monitor from the events but queues and
   * publishes nothing until configure() turns it on ([mqtt] enabled changed while the daemon runs).
   */
  constructor(
    private readonly db: Db,
    private readonly history: HistoryStore,
    private o: MqttOptions,
    private readonly monitors: () => MonitorT[],
    private readonly log: Logger,
    private enabled = true,
  ) {
    this.backoffMs = o.reconnectDelayMs;
    this.useOptions(o);
    this.queued = (db.prepare('SELECT count(*) AS n FROM mqtt_queue').get() as { n: number }).n;
    this.dropped = history.counter(DROPPED);
    this.presentAtBoot = history.lastPresent();
  }

  private useOptions(o: MqttOptions): void {
    this.o = o;
    this.clientId = o.clientId ?? `vigil-${haId(hostname())}`;
    this.ctx = {
      prefix: o.topicPrefix,
      discoveryPrefix: o.discoveryPrefix,
      nodeId: haId(this.clientId),
      boxName: `Vigil ${hostname()}`,
    };
    this.t = topics(o.topicPrefix);
  }

  /**
   * New settings while running (PATCH /v1/settings, SIGHUP): the connection is closed ("offline" on the old
   * availability topic) and opened again with the new broker, topics and options; presence and the queue
   * are kept (messages queued for the old broker go to the new one). `enabled` false disconnects and stops
   * queueing; true connects.
   */
  async configure(o: MqttOptions, enabled: boolean): Promise<void> {
    if (this.closed) return;
    if (this.enabled) await this.disconnect();
    this.useOptions(o);
    this.backoffMs = o.reconnectDelayMs;
    this.enabled = enabled;
    if (!enabled) return;
    if (this.started) this.connect();
    else this.start();
  }

  /** Persons shown present when the last process stopped are absent now (their sessions ended with it). */
  private resetPresenceFromHistory(): void {
    const present = this.presentAtBoot;
    if (!present.length) return;
    this.history.transaction(() => {
      for (const p of present) this.enqueue(this.t.person(p.monitor_id, p.person_id), 'OFF', true);
      for (const m of new Set(present.map((p) => p.monitor_id)))
        this.enqueue(this.t.state(m), JSON.stringify(this.stateOf(m)), true);
    });
  }

  start(): void {
    if (this.enabled) {
      this.started = true;
      this.resetPresenceFromHistory();
    }
    // Deleted persons' rows are swept with MQTT off too: enqueue() then publishes nothing (as for any change
    // made while it is off) and the rows go, so the table does not grow on a box without a broker.
    this.sweepDeletedPersons();
    if (!this.clearTimer) {
      this.clearTimer = setInterval(() => this.sweepDeletedPersons(), CLEAR_INTERVAL_MS);
      this.clearTimer.unref();
    }
    if (this.enabled) this.connect();
  }

  private sweepDeletedPersons(): void {
    try {
      this.clearDeletedPersons();
    } catch (e) {
      this.log.error({ err: e }, 'clearing the presence topics of deleted persons failed');
    }
  }

  // ---- outputs of the history (inside its transaction) ----

  recorded(e: StoredEvent): void {
    // A deleted monitor's exits (its session ended with the delete) would bring its cleared topics back.
    if (this.deletedMonitors.has(e.monitor_id)) return;
    const view = eventView(e);
    this.enqueue(this.t.events(e.monitor_id), JSON.stringify(view), this.o.retain);
    // The exit of an earlier session (closed at start for a process that died): that presence is reset already.
    const current = this.presence.get(e.monitor_id);
    if (current && current.epoch !== e.stream_epoch && e.type.endsWith('_exit')) return;
    const p = this.presenceOf(e.monitor_id, e.stream_epoch);
    const track = e.track_id ?? '';
    if (e.type === 'zone_enter' || e.type === 'zone_exit') {
      // A zone removed meanwhile (its session restarted with the change) keeps its cleared topics.
      if (!e.zone || this.removedZones.has(`${e.monitor_id}\0${e.zone}`)) return;
      let inZone = p.zones.get(e.zone);
      if (!inZone) p.zones.set(e.zone, (inZone = new Map()));
      if (e.type === 'zone_enter') inZone.set(track, { id: e.person_id, name: e.person_name, since: e.occurred_at });
      else inZone.delete(track);
      this.enqueue(this.t.zone(e.monitor_id, e.zone), JSON.stringify(this.zoneStateOf(e.monitor_id, e.zone)), true);
      return;
    }
    let personChanged: { id: string; on: boolean } | null = null;
    if (e.type === 'person_enter' && e.person_id) {
      const wasPresent = [...p.tracks.values()].some((x) => x.id === e.person_id);
      p.tracks.set(track, { id: e.person_id, name: e.person_name, since: e.occurred_at });
      p.lastPerson = { id: e.person_id, name: e.person_name, at: e.occurred_at };
      if (!wasPresent) personChanged = { id: e.person_id, on: true };
    } else if (e.type === 'person_exit' && e.person_id) {
      // Only a track shown present turns its person OFF: a deleted person's topic, cleared with its tracks,
      // is not published again by the exit that follows the delete.
      if (p.tracks.delete(track) && ![...p.tracks.values()].some((x) => x.id === e.person_id))
        personChanged = { id: e.person_id, on: false };
    } else if (e.type === 'unknown_enter') p.unknownTracks.add(track);
    else if (e.type === 'unknown_exit') p.unknownTracks.delete(track);
    else return;
    if (personChanged)
      this.enqueue(this.t.person(e.monitor_id, personChanged.id), personChanged.on ? 'ON' : 'OFF', true);
    this.enqueue(this.t.state(e.monitor_id), JSON.stringify(this.stateOf(e.monitor_id)), true);
  }

  snapshotReady(e: StoredEvent, frameJpeg: Buffer): void {
    if (this.o.snapshots) this.enqueue(this.t.snapshot(e.monitor_id), frameJpeg, true);
  }

  sessionEnded(monitorId: string, epoch: string): void {
    const p = this.presence.get(monitorId);
    if (!p || p.epoch !== epoch) return;
    this.endPresence(monitorId, p);
  }

  private endPresence(monitorId: string, p: Presence): void {
    for (const id of new Set([...p.tracks.values()].map((x) => x.id)))
      this.enqueue(this.t.person(monitorId, id), 'OFF', true);
    p.tracks.clear();
    p.unknownTracks.clear();
    this.enqueue(this.t.state(monitorId), JSON.stringify(this.stateOf(monitorId)), true);
    const occupied = [...p.zones].filter(([, tracks]) => tracks.size > 0).map(([zone]) => zone);
    p.zones.clear();
    for (const zone of occupied)
      if (!this.removedZones.has(`${monitorId}\0${zone}`))
        this.enqueue(this.t.zone(monitorId, zone), JSON.stringify(this.zoneStateOf(monitorId, zone)), true);
  }

  private presenceOf(monitorId: string, epoch: string): Presence {
    let p = this.presence.get(monitorId);
    if (!p) {
      p = {
        epoch,
        tracks: new Map(),
        unknownTracks: new Set(),
        lastPerson: this.history.lastPerson(monitorId),
        zones: new Map(),
      };
      this.presence.set(monitorId, p);
    } else if (p.epoch !== epoch) {
      // A new session: the old one's tracks ended with it.
      if (p.tracks.size || p.unknownTracks.size || [...p.zones.values()].some((z) => z.size))
        this.endPresence(monitorId, p);
      p.epoch = epoch;
    }
    return p;
  }

  /** The retained state document of a monitor. */
  stateOf(monitorId: string) {
    const p = this.presence.get(monitorId);
    const persons = p ? [...new Map([...p.tracks.values()].map((x) => [x.id, x])).values()] : [];
    const unknown = p?.unknownTracks.size ?? 0;
    return {
      monitor_id: monitorId,
      occupied: persons.length + unknown > 0,
      person_count: persons.length,
      unknown_count: unknown,
      persons: persons.map((x) => ({ id: x.id, name: x.name, since: x.since })),
      // Before this process saw an event of the monitor: the history's (so a restart keeps it).
      last_person: p ? p.lastPerson : this.history.lastPerson(monitorId),
      updated_at: new Date().toISOString(),
    };
  }

  /** The retained state document of one zone: the faces in it now. */
  zoneStateOf(monitorId: string, zone: string) {
    const tracks = [...(this.presence.get(monitorId)?.zones.get(zone)?.values() ?? [])];
    const persons = [...new Map(tracks.filter((x) => x.id !== null).map((x) => [x.id, x])).values()];
    const unknown = tracks.filter((x) => x.id === null).length;
    return {
      monitor_id: monitorId,
      zone,
      occupied: tracks.length > 0,
      person_count: persons.length,
      unknown_count: unknown,
      persons: persons.map((x) => ({ id: x.id, name: x.name, since: x.since })),
      updated_at: new Date().toISOString(),
    };
  }

  // ---- motion (the monitors tell it directly: it is a state, not an event of the history) ----

  motionChanged(monitorId: string, active: boolean): void {
    if (this.deletedMonitors.has(monitorId)) return;
    if (active) this.moving.add(monitorId);
    else this.moving.delete(monitorId);
    this.history.transaction(() => this.enqueue(this.t.motion(monitorId), active ? 'ON' : 'OFF', true));
  }

  // ---- monitors (Home Assistant entities) ----

  /**
   * Zones a monitor no longer has: their retained state and (with discovery) their entity are cleared; new
   * ones get their (empty) state at once.
   */
  private zonesChanged(m: MonitorT, previous: MonitorT | null): void {
    const now = m.zones.map((z) => z.name);
    const before = previous?.zones.map((z) => z.name) ?? [];
    for (const zone of now) this.removedZones.delete(`${m.id}\0${zone}`);
    const removed = before.filter((z) => !now.includes(z));
    const added = now.filter((z) => !before.includes(z));
    if (!removed.length && !added.length) return;
    this.history.transaction(() => {
      for (const zone of removed) {
        this.removedZones.add(`${m.id}\0${zone}`);
        this.presence.get(m.id)?.zones.delete(zone);
        this.enqueue(this.t.zone(m.id, zone), '', true);
        if (this.o.discovery) this.enqueue(zoneConfigTopic(this.ctx, m.id, zone), '', true);
      }
      for (const zone of added)
        this.enqueue(this.t.zone(m.id, zone), JSON.stringify(this.zoneStateOf(m.id, zone)), true);
    });
  }

  /** `previous`: the monitor before the change (null: just created). */
  monitorChanged(m: MonitorT, previous: MonitorT | null = null): void {
    this.deletedMonitors.delete(m.id);
    this.zonesChanged(m, previous);
    if (this.o.discovery && this.connected) this.publishDiscovery([m]);
  }

  /** Removes the monitor's entities (empty retained config) and clears its retained topics (`zones`: its zones' too). */
  monitorDeleted(id: string, zones: string[] = []): void {
    const p = this.presence.get(id);
    this.presence.delete(id);
    this.deletedMonitors.add(id);
    this.history.transaction(() => {
      // Every person the monitor ever showed (present or OFF), not only those present now.
      const persons = new Set([...(p?.tracks.values() ?? [])].map((x) => x.id));
      for (const pid of this.history.personsSeen(id)) persons.add(pid);
      for (const pid of persons) this.enqueue(this.t.person(id, pid), '', true);
      this.enqueue(this.t.state(id), '', true);
      this.enqueue(this.t.snapshot(id), '', true);
      this.enqueue(this.t.motion(id), '', true);
      for (const zone of zones) this.enqueue(this.t.zone(id, zone), '', true);
      if (this.o.discovery)
        for (const topic of monitorDiscoveryTopics(this.ctx, id, zones)) this.enqueue(topic, '', true);
    });
    this.moving.delete(id);
    this.drain();
  }

  /**
   * Clears the retained presence topic of every deleted person (rows the person delete's trigger wrote, see
   * migration 0017): an empty retained message, their tracks off the state, and the monitor's last person
   * from the history again when it was them.
   */
  private clearDeletedPersons(): void {
    if (this.closed) return;
    const rows = this.db.prepare('SELECT monitor_id, person_id FROM mqtt_person_topics_cleared LIMIT 500').all() as {
      monitor_id: string;
      person_id: string;
    }[];
    if (!rows.length) return;
    const live = new Set(this.monitors().map((m) => m.id));
    const remove = this.db.prepare('DELETE FROM mqtt_person_topics_cleared WHERE monitor_id = ? AND person_id = ?');
    this.history.transaction(() => {
      const changed = new Set<string>();
      for (const r of rows) {
        this.enqueue(this.t.person(r.monitor_id, r.person_id), '', true);
        remove.run(r.monitor_id, r.person_id);
        const p = this.presence.get(r.monitor_id);
        if (p) {
          for (const [track, x] of p.tracks) if (x.id === r.person_id) p.tracks.delete(track);
          if (p.lastPerson?.id === r.person_id) p.lastPerson = this.history.lastPerson(r.monitor_id);
        }
        if (live.has(r.monitor_id)) changed.add(r.monitor_id);
      }
      for (const m of changed) this.enqueue(this.t.state(m), JSON.stringify(this.stateOf(m)), true);
    });
    if (rows.length === 500) setImmediate(() => this.clearDeletedPersons());
  }

  // ---- the durable queue ----

  /** Synchronous; called inside the history's transaction (or its own). */
  private enqueue(topic: string, payload: string | Buffer, retain: boolean): void {
    if (!this.enabled) return;
    const db = this.db;
    if (retain) this.queued -= db.prepare('DELETE FROM mqtt_queue WHERE retain = 1 AND topic = ?').run(topic).changes;
    db.prepare('INSERT INTO mqtt_queue (topic, payload, retain, created_ms) VALUES (?, ?, ?, ?)').run(
      topic,
      typeof payload === 'string' ? Buffer.from(payload) : payload,
      retain ? 1 : 0,
      Date.now(),
    );
    this.queued++;
    if (this.queued > this.o.queueMaxMessages) {
      const over = this.queued - this.o.queueMaxMessages;
      const n = db
        .prepare('DELETE FROM mqtt_queue WHERE seq IN (SELECT seq FROM mqtt_queue ORDER BY seq LIMIT ?)')
        .run(over).changes;
      this.queued -= n;
      this.dropped += n;
      this.history.addCounter(DROPPED, n);
      if (Date.now() - this.lastDropLog > 10_000) {
        this.lastDropLog = Date.now();
        this.log.warn(
          { dropped_total: this.dropped, queue_max_messages: this.o.queueMaxMessages },
          'MQTT queue full: the oldest messages were dropped',
        );
      }
    }
    if (this.connected) setImmediate(() => this.drain());
  }

  /** Publishes queued messages in order, a window at a time, deleting each window once acknowledged. */
  private async drain(): Promise<void> {
    if (this.draining || !this.connected || this.closed) return;
    this.draining = true;
    try {
      while (this.connected && !this.closed) {
        const rows = this.db
          .prepare('SELECT seq, topic, payload, retain FROM mqtt_queue ORDER BY seq LIMIT ?')
          .all(WINDOW) as { seq: number; topic: string; payload: Buffer; retain: number }[];
        if (!rows.length) break;
        const client = this.client!;
        await Promise.race([
          this.lost,
          Promise.all(
            rows.map(
              (r) =>
                new Promise<void>((resolve, reject) => {
                  client.publish(r.topic, r.payload, { qos: this.o.qos, retain: r.retain === 1 }, (err) =>
                    err ? reject(err) : resolve(),
                  );
                }),
            ),
          ),
        ]);
        if (!this.db.open) return;
        const last = rows[rows.length - 1]!.seq;
        this.queued -= this.db.prepare('DELETE FROM mqtt_queue WHERE seq <= ?').run(last).changes;
        this.published += rows.length;
        this.onPublished?.(rows.map((r) => r.topic));
      }
    } catch (e) {
      this.lastError = (e as Error).message;
      this.log.warn({ err: this.lastError }, 'MQTT publish failed; the messages stay queued');
    } finally {
      this.draining = false;
    }
    if (this.connected && this.queued > 0 && !this.closed) setImmediate(() => this.drain());
  }

  // ---- connection ----

  private options(): IClientOptions {
    const o = this.o;
    return {
      clientId: this.clientId,
      clean: true,
      keepalive: o.keepaliveSeconds,
      reconnectPeriod: 0,
      connectTimeout: 10_000,
      resubscribe: false,
      ...(o.username ? { username: o.username } : {}),
      ...(o.password ? { password: o.password } : {}),
      will: { topic: this.t.availability, payload: Buffer.from('offline'), qos: 1, retain: true },
      rejectUnauthorized: o.tlsVerify,
      ...(o.caFile ? { ca: readFileSync(o.caFile) } : {}),
      ...(o.certFile ? { cert: readFileSync(o.certFile) } : {}),
      ...(o.keyFile ? { key: readFileSync(o.keyFile) } : {}),
    };
  }

  /** One connection at a time; our own reconnect loop (mqtt.js's would re-send its in-memory copies out of our order). */
  private connect(): void {
    if (this.closed) return;
    this.reconnectTimer = null;
    let client: MqttClient;
    try {
      client = mqtt.connect(this.o.url, this.options());
    } catch (e) {
      this.lastError = (e as Error).message;
      this.log.error({ err: this.lastError }, 'MQTT client could not start');
      this.retry();
      return;
    }
    this.client = client;
    client.on('connect', () => {
      if (this.closed || this.client !== client) return;
      this.lost = new Promise<never>((_, reject) => {
        this.markLost = reject;
      });
      this.lost.catch(() => undefined);
      this.connected = true;
      this.connectedSince = new Date().toISOString();
      this.backoffMs = this.o.reconnectDelayMs;
      this.log.info(
        { broker: redactBrokerUrl(this.o.url), client_id: this.clientId, queued: this.queued },
        'MQTT connected',
      );
      client.publish(this.t.availability, 'online', { qos: 1, retain: true });
      if (this.o.discovery) {
        client.subscribe(homeAssistantStatusTopic(this.o.discoveryPrefix), { qos: 1 });
        this.publishDiscovery(this.monitors(), true);
      }
      void this.drain();
    });
    client.on('message', (topic, payload) => {
      if (topic === homeAssistantStatusTopic(this.o.discoveryPrefix) && payload.toString() === 'online')
        this.publishDiscovery(this.monitors(), true);
    });
    client.on('error', (e) => {
      this.lastError = e.message;
    });
    client.on('close', () => {
      if (this.client !== client) return;
      const was = this.connected;
      this.connected = false;
      this.markLost(new Error('the MQTT connection closed'));
      this.connectedSince = null;
      client.end(true);
      this.client = null;
      if (was) this.log.warn({ err: this.lastError }, 'MQTT connection lost; events are queued');
      this.retry();
    });
  }

  private retry(): void {
    if (this.closed || this.reconnectTimer) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.o.maxReconnectDelayMs);
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  /** Discovery is re-sent on every connect, not queued: it describes now, not history. */
  private publishDiscovery(monitors: MonitorT[], withBox = false): void {
    const client = this.client;
    if (!client || !this.connected) return;
    const messages = [
      ...(withBox ? boxDiscovery(this.ctx) : []),
      ...monitors.flatMap((m) => monitorDiscovery(this.ctx, m)),
    ];
    for (const m of messages) client.publish(m.topic, JSON.stringify(m.payload), { qos: 1, retain: true });
    if (withBox)
      for (const topic of staleDiscoveryTopics(
        this.ctx,
        monitors.map((m) => m.id),
      ))
        client.publish(topic, '', { qos: 1, retain: true });
    // Retained state exists for every monitor (and its motion and zones), so entities are never "unknown".
    if (withBox) {
      this.history.transaction(() => {
        for (const m of monitors) {
          this.enqueue(this.t.motion(m.id), this.moving.has(m.id) ? 'ON' : 'OFF', true);
          if (this.presence.has(m.id)) continue;
          this.enqueue(this.t.state(m.id), JSON.stringify(this.stateOf(m.id)), true);
          for (const z of m.zones)
            this.enqueue(this.t.zone(m.id, z.name), JSON.stringify(this.zoneStateOf(m.id, z.name)), true);
        }
      });
    }
  }

  status(): MqttStatusT {
    if (!this.enabled) return mqttOffStatus(this.o.topicPrefix);
    return {
      enabled: true,
      connected: this.connected,
      broker: redactBrokerUrl(this.o.url),
      client_id: this.clientId,
      topic_prefix: this.o.topicPrefix,
      queued: this.queued,
      queue_max_messages: this.o.queueMaxMessages,
      dropped: this.dropped,
      published: this.published,
      last_error: this.lastError,
      connected_since: this.connectedSince,
      discovery: this.o.discovery,
    };
  }

  /** Says "offline" (retained) and disconnects; queued messages stay for the next start. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.clearTimer) clearInterval(this.clearTimer);
    await this.disconnect();
  }

  /** Ends the connection (and any reconnect) after a retained "offline"; the close handler ignores a client it no longer holds. */
  private async disconnect(): Promise<void> {
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    const client = this.client;
    this.client = null;
    if (!client) return;
    if (this.connected)
      await new Promise<void>((r) =>
        client.publish(this.t.availability, 'offline', { qos: 1, retain: true }, () => r()),
      );
    this.connected = false;
    this.connectedSince = null;
    this.markLost(new Error('the MQTT connection was closed for new settings'));
    await new Promise<void>((r) => client.end(false, {}, () => r()));
  }
}
