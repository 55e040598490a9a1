import { open, type FileHandle } from 'node:fs/promises';
import type { CollectionService } from '../collections/collectionService.js';
import type { PersonService } from '../collections/personService.js';
import { Errors } from '../contract/errors.js';
import type {
  EventDeleteQueryT,
  EventEnrolT,
  EventListQueryT,
  HistoryEventT,
  MqttStatusT,
} from '../contract/events.js';
import { toPage, type CursorCodec, type Page } from '../store/cursors.js';
import type { EventHistory } from './eventHistory.js';
import { mqttOffStatus, type MqttPublisher } from './mqttPublisher.js';
import { ADMIN_SCOPE } from './webhookOutput.js';
import { nominalSchedule, type RetryPolicy } from '../webhooks/retrySchedule.js';
import type { WebhookStore } from '../webhooks/webhookStore.js';
import { eventView } from './eventView.js';
import { enrolImages } from './enrolment.js';
import type { EventFilter, HistoryStore, StoredEvent } from './historyStore.js';
import type { SnapshotStore } from './snapshotStore.js';
import type { EventForwarder } from './eventForwarder.js';
import { formatPosition, parsePosition, type FleetPosition, type PgHistory } from './pgHistory.js';
import { isConnectionError } from '../store/postgres.js';
import { storeCall } from '../store/pgQuery.js';

/** Fleet mode: the shared history in PostgreSQL, this box's forwarder, and this box. */
export interface FleetHistory {
  pg: PgHistory;
  forwarder: EventForwarder;
  boxId: string;
}

/** Where a fleet-mode list came from: the fleet's database, or this box's own history while it is unreachable. */
export interface HistorySource {
  source: 'database' | 'local';
  degraded: boolean;
  reason: string | null;
}

const DOWN = Symbol('database down');

const ms = (iso: string | undefined) => (iso === undefined ? undefined : Date.parse(iso));

/** The filter of a list or range-delete query. */
export function filterOf(q: Omit<EventDeleteQueryT, 'all'>): EventFilter {
  return {
    box_id: q.box_id,
    monitor_id: q.monitor_id,
    collection_id: q.collection_id,
    person_id: q.person_id,
    unknown_id: q.unknown_id,
    types: q.type,
    unknown_only: q.unknown_only,
    since_ms: ms(q.since),
    until_ms: ms(q.until),
  };
}

/**
 * The history API: list (filters, newest first, signed cursors bound to the filter), get, pictures,
 * delete one or a range, and enrol an event's face crop into a person through the normal registration.
 */
export class EventService {
  constructor(
    private readonly store: HistoryStore,
    private readonly history: EventHistory,
    private readonly snapshots: SnapshotStore,
    private readonly persons: PersonService,
    private readonly collections: CollectionService,
    private readonly cursors: CursorCodec,
    private readonly outputs: {
      mqtt: MqttPublisher | null;
      mqttPrefix: string;
      webhooks: WebhookStore;
      retry: RetryPolicy;
      retention: { max_age_days: number; max_events: number; max_snapshot_bytes: number };
    },
    private readonly fleet: FleetHistory | null = null,
  ) {}

  /** Runs a fleet database read; DOWN (with the reason kept) when the database cannot be reached. */
  private async db<T>(fn: (pg: PgHistory) => Promise<T>): Promise<T | typeof DOWN> {
    try {
      return await fn(this.fleet!.pg);
    } catch (e) {
      if (!isConnectionError(e)) throw e;
      this.downReason = e instanceof Error ? e.message : String(e);
      return DOWN;
    }
  }
  private downReason = '';

  /** Runs a fleet database write in the forwarder's chain; 503 store_unavailable (nothing written) when unreachable. */
  private async write<T>(fn: (pg: PgHistory) => Promise<T>): Promise<T> {
    return this.fleet!.forwarder.run(() => storeCall(() => fn(this.fleet!.pg)));
  }

  /** [events] retention changed while the daemon runs (PATCH /v1/settings, SIGHUP): the status shows what is enforced. */
  setRetention(r: { max_age_days: number; max_events: number; max_snapshot_bytes: number }): void {
    this.outputs.retention = r;
  }

  /** The history's size and retention, and the state of the MQTT and webhook outputs. */
  status() {
    const o = this.outputs;
    const mqtt: MqttStatusT = o.mqtt?.status() ?? mqttOffStatus(o.mqttPrefix);
    return {
      history: {
        ...this.store.stats(),
        pending_writes: this.history.pendingWrites,
        retention: o.retention,
        removed_by_retention: this.store.counter('retention_deleted'),
      },
      mqtt,
      webhooks: {
        ...o.webhooks.summary(ADMIN_SCOPE),
        retry_schedule_seconds: nominalSchedule(o.retry, 10).map((ms) => ms / 1000),
      },
      ...(this.fleet ? { fleet: { box_id: this.fleet.boxId, ...this.fleet.forwarder.snapshot() } } : {}),
    };
  }

  private row(id: string): StoredEvent {
    const r = this.store.get(id);
    if (!r) throw Errors.eventNotFound(id);
    return r;
  }

  /**
   * This box's row of an event (its pictures are here); in fleet mode an event another box recorded is
   * 409 event_picture_on_other_box, one nobody has is 404.
   */
  private async ownRow(id: string): Promise<StoredEvent> {
    const local = this.store.get(id);
    if (local || !this.fleet) return local ?? this.row(id);
    const r = await this.db((pg) => pg.get(id));
    if (r === DOWN) throw Errors.storeUnavailable(this.downReason);
    if (!r) throw Errors.eventNotFound(id);
    // This box's own event whose local row retention removed: its files are gone too (404 missing below).
    if (r.box_id === this.fleet.boxId) return r;
    throw Errors.eventPictureOnOtherBox(id, r.box_id);
  }

  private localList(q: EventListQueryT): Page<HistoryEventT> {
    const f = filterOf(q);
    const scope = `events:${JSON.stringify(f)}`;
    let before: number | null = null;
    if (q.cursor) {
      before = Number(this.cursors.decode(q.cursor, scope));
      if (!Number.isSafeInteger(before)) throw Errors.invalidCursor('malformed');
    }
    const page = toPage(this.store.list(f, before, q.limit + 1), q.limit, (r) => String(r.seq), this.cursors, scope);
    return { items: this.store.withClips(page.items).map(eventView), next_cursor: page.next_cursor };
  }

  /**
   * Newest first. Fleet mode: the fleet's history from PostgreSQL (every box; box_id filters), ordered by
   * occurrence; while the database is unreachable, this box's own history with `source: local,
   * degraded: true` (its cursor continues locally). A database cursor while it is down is 503.
   */
  async list(q: EventListQueryT): Promise<Page<HistoryEventT> & { fleet?: HistorySource }> {
    if (!this.fleet) return this.localList(q);
    const f = filterOf(q);
    const scope = `events-fleet:${JSON.stringify(f)}`;
    let before: FleetPosition | null = null;
    if (q.cursor) {
      let raw: string | null = null;
      try {
        raw = this.cursors.decode(q.cursor, scope);
      } catch {
        // Not a database cursor: a local one (issued while the database was down) continues locally.
        return {
          ...this.localList(q),
          fleet: { source: 'local', degraded: !this.fleet.forwarder.connected, reason: null },
        };
      }
      before = parsePosition(raw);
      if (!before) throw Errors.invalidCursor('malformed');
    }
    const rows = await this.db((pg) => pg.list(f, before, q.limit + 1));
    if (rows === DOWN) {
      if (before) throw Errors.storeUnavailable(this.downReason);
      return { ...this.localList(q), fleet: { source: 'local', degraded: true, reason: this.downReason } };
    }
    const page = toPage(rows, q.limit, (r) => formatPosition({ ms: r.occurred_ms, id: r.id }), this.cursors, scope);
    return {
      items: page.items.map(eventView),
      next_cursor: page.next_cursor,
      fleet: { source: 'database', degraded: false, reason: null },
    };
  }

  /** Fleet mode: from the database (any box), else this box's own history (not yet forwarded, or the database down). */
  async get(id: string): Promise<HistoryEventT> {
    if (!this.fleet) return eventView(this.store.withClips([this.row(id)])[0]!);
    const r = await this.db((pg) => pg.get(id));
    if (r !== DOWN && r) return eventView(r);
    const local = this.store.get(id);
    if (local) return eventView(this.store.withClips([local])[0]!);
    if (r === DOWN) throw Errors.storeUnavailable(this.downReason);
    throw Errors.eventNotFound(id);
  }

  /** The frame snapshot or the face crop (JPEG): only the recording box has them. */
  async picture(id: string, kind: 'frame' | 'crop'): Promise<Buffer> {
    const r = await this.ownRow(id);
    if (r.snapshot !== 'ready' || !r.snapshot_path) throw Errors.eventSnapshotNotFound(id, r.snapshot);
    try {
      return await this.snapshots.read(r.snapshot_path, kind);
    } catch {
      throw Errors.eventSnapshotNotFound(id, 'missing');
    }
  }

  /**
   * The event's clip file (MP4) and its size: only the recording box has it. 404 clip_not_found while it
   * records, when it failed or expired, and for an event without one.
   */
  async clip(id: string): Promise<{ file: FileHandle; size: number }> {
    const r = await this.ownRow(id);
    const c = r.clip_id ? this.store.clipRow(r.clip_id) : null;
    if (!c || c.status !== 'ready') throw Errors.clipNotFound(id, c?.status ?? 'none');
    // Opened here, not by path later: retention may remove the file between this answer and the stream's
    // open, which would cut a 200 already sent; an open handle keeps the bytes readable.
    let file: FileHandle;
    try {
      file = await open(this.snapshots.file(c.path, 'clip'), 'r');
    } catch {
      throw Errors.clipNotFound(id, 'missing');
    }
    try {
      return { file, size: (await file.stat()).size };
    } catch (e) {
      await file.close();
      throw e;
    }
  }

  /** Fleet mode: deleted from the database (every box's view) and from this box's history. */
  async delete(id: string): Promise<void> {
    if (!this.fleet) {
      if (this.store.deleteWhere('id = ?', [id]) === 0) throw Errors.eventNotFound(id);
      this.history.sweepTrash();
      return;
    }
    // Both deletes in the forwarder's chain: a copy of this row cannot run between them.
    const { inDb, local } = await this.write(async (pg) => ({
      inDb: await pg.deleteOne(id),
      local: this.store.deleteWhere('id = ?', [id]),
    }));
    this.history.sweepTrash();
    if (!inDb && !local) throw Errors.eventNotFound(id);
  }

  /** Deletes every event matching the filters; a query without any filter needs all=true. */
  async deleteRange(q: EventDeleteQueryT): Promise<number> {
    const f = filterOf(q);
    const filtered = Object.values(f).some((v) => v !== undefined);
    if (!filtered && !q.all)
      throw Errors.invalidRequest(
        'give at least one filter (box_id, monitor_id, collection_id, person_id, type, unknown_only, since, until) or all=true',
        { field: 'all' },
      );
    if (!this.fleet) {
      const n = this.store.deleteFiltered(f);
      this.history.sweepTrash();
      return n;
    }
    // The database's rows, plus this box's rows not forwarded yet (they would otherwise arrive later).
    const { n, notForwarded } = await this.write(async (pg) => {
      const notForwarded = this.store.countFilteredAfter(f, this.store.forwardedSeq());
      const n = await pg.deleteFiltered(f);
      this.store.deleteFiltered(f);
      return { n, notForwarded };
    });
    this.history.sweepTrash();
    return n + notForwarded;
  }

  /**
   * Adds the event's face crop to an existing person (or creates one) with the normal registration:
   * detection on the crop, the review of `review_mode`, the collection's limits, the index update.
   */
  async enrol(id: string, body: EventEnrolT, signal?: AbortSignal) {
    const r = await this.ownRow(id);
    if (!r.face_json) throw Errors.eventNotEnrollable(id, 'it is not an identity event');
    if (r.snapshot !== 'ready' || !r.snapshot_path)
      throw Errors.eventNotEnrollable(id, `its snapshot is ${r.snapshot}`);
    const collectionId = body.collection_id ?? r.collection_id;
    if (!collectionId)
      throw Errors.invalidRequest('collection_id: the event names no collection; give one', { field: 'collection_id' });
    this.collections.get(collectionId);
    const bytes = await this.snapshots.read(r.snapshot_path, 'crop').catch(() => {
      throw Errors.eventNotEnrollable(id, 'its snapshot file is missing');
    });
    return enrolImages(
      this.persons,
      collectionId,
      [{ filename: `event-${id}.jpg`, bytes }],
      body,
      { enrolled_from_event: id },
      signal,
    );
  }
}
