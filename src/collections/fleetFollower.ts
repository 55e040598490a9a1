import type { Logger } from 'pino';
import type { CollectionT } from '../contract/collections.js';
import type { IndexRow } from '../search/collectionIndex.js';
import type { SearchIndexes } from '../search/indexManager.js';
import { isApiError } from '../contract/errors.js';
import { isConnectionError, type PgOptions } from '../store/postgres.js';
import { PgListener } from '../store/pgListener.js';
import { blobToEmbedding, type CollectionStore } from './collectionStore.js';
import { GALLERY_CHANNEL, type CollectionSnapshot, type PgGallery } from './pgGallery.js';

export interface FollowerStatus {
  state: 'connected' | 'disconnected';
  since: string;
  last_error: string | null;
  /** Collection syncs applied (changes caught up), and full copies among them. */
  syncs: number;
  full_copies: number;
  last_sync_at: string | null;
  /** Change revisions applied to the replica by catching up (a full copy counts the revisions it jumped). */
  revisions_applied: number;
  /** Revisions committed in PostgreSQL that this box has heard of and not yet applied (all collections). */
  revisions_behind: number;
  /** Change-log rows this box deleted as the fleet's pruner, and when it last did. */
  changes_pruned: number;
  last_prune_at: string | null;
}

export interface FollowerOptions {
  /** Milliseconds between full catch-up passes (NOTIFY wakes the follower sooner). */
  intervalMs: number;
  /** Change-log pruning: keep what boxes seen within this many seconds still need; 0 = never prune. */
  retentionSeconds?: number;
  /** Seconds between two prunes of the fleet (one box does each). */
  pruneIntervalSeconds?: number;
}

/** Settings whose change reconfigures a loaded index. */
const INDEX_SETTINGS = [
  'capacity_rows',
  'load_policy',
  'search_index',
  'hnsw_connectivity',
  'hnsw_expansion_add',
  'hnsw_expansion_search',
] as const;

/**
 * Keeps this box's replica of the gallery (its SQLite file) and its search indexes up to PostgreSQL.
 * LISTEN vigil_gallery wakes it on every commit; each wake-up reads the collection's changes after the
 * replica's change_revision in one snapshot and applies them in one SQLite transaction, then to the
 * index (added and removed rows, or a rebuild when the index is behind). After any disconnect it catches
 * up every collection by revision, without a full rebuild. While PostgreSQL is unreachable the replica
 * and indexes keep serving search and monitors; the box reports degraded.
 */
export class GalleryFollower {
  private readonly listener: PgListener;
  private readonly chains = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private status: FollowerStatus = {
    state: 'disconnected',
    since: new Date().toISOString(),
    last_error: null,
    syncs: 0,
    full_copies: 0,
    last_sync_at: null,
    revisions_applied: 0,
    revisions_behind: 0,
    changes_pruned: 0,
    last_prune_at: null,
  };
  /** The newest change_revision heard of per collection (heads, snapshots, NOTIFY): the lag's reference. */
  private readonly known = new Map<string, number>();
  private maintainError: string | null = null;
  /** Called after a collection's replica changed (tests and benches observe propagation). */
  onApplied: ((collectionId: string) => void) | null = null;

  constructor(
    private readonly gallery: PgGallery,
    private readonly store: CollectionStore,
    private readonly indexes: SearchIndexes,
    pgOptions: PgOptions,
    private readonly opts: FollowerOptions,
    private readonly log: Logger,
  ) {
    this.listener = new PgListener(pgOptions, GALLERY_CHANNEL, {
      beforeListen: () => this.gallery.ensureSchema(),
      onNotification: (collectionId) => {
        // The payload names the collection only: it is at least one revision ahead of the replica now.
        this.heard(collectionId, (this.store.replicaHead(collectionId)?.change_revision ?? 0) + 1);
        void this.sync(collectionId).catch((e: unknown) =>
          this.log.warn({ err: e, collection_id: collectionId }, 'fleet: sync failed; retried on the next pass'),
        );
      },
      // Catch up everything missed while not listening (startup or a disconnect).
      onListening: async () => {
        await this.syncAll();
        this.setState('connected');
      },
      onLost: (e) => this.setState('disconnected', e),
    });
  }

  get connected(): boolean {
    return this.status.state === 'connected';
  }

  snapshot(): FollowerStatus {
    let behind = 0;
    for (const [id, head] of this.known)
      behind += Math.max(0, head - (this.store.replicaHead(id)?.change_revision ?? 0));
    return { ...this.status, revisions_behind: behind };
  }

  private heard(id: string, revision: number): void {
    if (revision > (this.known.get(id) ?? -1)) this.known.set(id, revision);
  }

  private setState(state: FollowerStatus['state'], error?: unknown): void {
    if (error !== undefined) this.status.last_error = error instanceof Error ? error.message : String(error);
    if (this.status.state === state) return;
    this.status.state = state;
    this.status.since = new Date().toISOString();
    if (state === 'disconnected')
      this.log.warn(
        { error: this.status.last_error },
        'fleet: lost the gallery database; serving search from the local replica (degraded)',
      );
    else this.log.info('fleet: following the gallery database');
  }

  /** Catches up once (if the database answers), then listens. Never throws: an unreachable database is degraded. */
  async start(): Promise<void> {
    await this.listener.start();
    this.timer = setInterval(() => {
      // A pass that fails (a pooled connection lost) marks the box degraded; the next pass that succeeds
      // while the same connection is still listening marks it connected again.
      const epoch = this.listener.epoch;
      if (this.listener.listening)
        void this.syncAll().then(
          () => {
            if (this.listener.listening && this.listener.epoch === epoch) this.setState('connected');
          },
          (e: unknown) => this.setState('disconnected', e),
        );
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  /** Brings every collection up to date: new ones copied, deleted ones dropped, the rest caught up by revision. */
  async syncAll(): Promise<void> {
    const heads = await this.gallery.heads();
    for (const h of heads) this.heard(h.id, h.change_revision);
    const remote = new Set(heads.map((h) => h.id));
    for (const id of this.store.replicaCollectionIds()) if (!remote.has(id)) await this.sync(id);
    for (const h of heads) {
      const local = this.store.replicaHead(h.id);
      if (!local || local.index_epoch !== h.index_epoch || local.change_revision !== h.change_revision)
        await this.sync(h.id);
    }
    await this.maintain();
  }

  /**
   * After each pass: tell PostgreSQL what this replica has applied, then (when pruning is on) offer to
   * prune the change log; one box of the fleet does it per interval. A failure here is logged and retried
   * on the next pass (a lost connection fails the pass as any other query would).
   */
  private async maintain(): Promise<void> {
    try {
      const mine = this.store.replicaCollectionIds().flatMap((id) => {
        const h = this.store.replicaHead(id);
        return h ? [{ id, index_epoch: h.index_epoch, change_revision: h.change_revision }] : [];
      });
      await this.gallery.recordProgress(mine);
      const retention = this.opts.retentionSeconds ?? 0;
      if (retention > 0) {
        const deleted = await this.gallery.pruneChanges(retention, this.opts.pruneIntervalSeconds ?? 600);
        if (deleted !== null) {
          this.status.changes_pruned += deleted;
          this.status.last_prune_at = new Date().toISOString();
          if (deleted > 0) this.log.info({ deleted }, 'fleet: pruned the gallery change log');
        }
      }
      this.maintainError = null;
    } catch (e) {
      if (isConnectionError(e) || (isApiError(e) && e.code === 'store_unavailable')) throw e;
      // Logged once per distinct problem, not every pass.
      const message = e instanceof Error ? e.message : String(e);
      if (message !== this.maintainError)
        this.log.warn({ err: e }, 'fleet: recording progress or pruning the change log failed; retried on every pass');
      this.maintainError = message;
    }
  }

  /** Brings one collection up to what PostgreSQL has committed; syncs of one collection run one at a time. */
  sync(collectionId: string): Promise<void> {
    const prev = this.chains.get(collectionId) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(() => this.syncNow(collectionId));
    this.chains.set(collectionId, next);
    void next
      .finally(() => {
        if (this.chains.get(collectionId) === next) this.chains.delete(collectionId);
      })
      .catch(() => undefined);
    return next;
  }

  private async syncNow(id: string): Promise<void> {
    const local = this.store.replicaHead(id);
    const snap = await this.gallery.snapshot(id, local);
    // The snapshot is PostgreSQL's word at this moment (a re-created collection starts again from 1).
    if (snap) this.known.set(id, snap.collection.change_revision);
    else this.known.delete(id);
    if (!snap) {
      if (local) {
        this.store.transaction(() => this.store.deleteCollection(id));
        this.indexes.drop(id);
        this.applied(id, false);
      }
      return;
    }
    if (!snap.full && local && snap.collection.change_revision === local.change_revision) return;
    const before = local ? this.store.getCollection(id) : null;
    const change = this.store.transaction(() => this.apply(snap, local !== null));
    const after = this.store.getCollection(id)!;
    this.status.revisions_applied += Math.max(
      0,
      snap.collection.change_revision -
        (local?.index_epoch === snap.collection.index_epoch ? local.change_revision : 0),
    );
    if (snap.full) {
      this.indexes.drop(id);
      if (after.load_policy === 'eager') this.indexes.ready(after);
    } else {
      if (
        before &&
        INDEX_SETTINGS.some((k) =>
          k === 'search_index'
            ? before.search_index.type !== after.search_index.type
            : k.startsWith('hnsw_')
              ? before.search_index.hnsw[k.slice(5) as 'connectivity'] !==
                after.search_index.hnsw[k.slice(5) as 'connectivity']
              : before[k as 'capacity_rows' | 'load_policy'] !== after[k as 'capacity_rows' | 'load_policy'],
        )
      )
        this.indexes.configure(after);
      if (change.add.length || change.remove.length || before?.search_revision !== after.search_revision) {
        this.indexes.applyCommitted(after, before?.search_revision ?? -1, change);
      }
    }
    this.applied(id, snap.full);
  }

  private applied(id: string, full: boolean): void {
    this.status.syncs++;
    if (full) this.status.full_copies++;
    this.status.last_sync_at = new Date().toISOString();
    this.onApplied?.(id);
  }

  /** One SQLite transaction: settings, deletions, then insertions, then PostgreSQL's counters and revisions. */
  private apply(snap: CollectionSnapshot, hadLocal: boolean): { add: IndexRow[]; remove: number[] } {
    const s = this.store,
      col = snap.collection;
    const remove: number[] = [],
      add: IndexRow[] = [];
    if (snap.full && hadLocal) s.deleteCollection(col.id);
    s.replicaUpsertCollection(col);
    if (!snap.full) {
      const livePersons = new Set(snap.persons.map((p) => p.seq)),
        liveFaces = new Set(snap.faces.map((f) => f.seq as number));
      for (const seq of snap.touchedFaces)
        if (!liveFaces.has(seq) && s.replicaHasFace(seq)) {
          s.deleteFace(seq);
          remove.push(seq);
        }
      for (const seq of snap.touchedPersons)
        if (!livePersons.has(seq) && s.replicaHasPerson(seq)) remove.push(...s.deletePerson(seq));
    }
    for (const p of snap.persons) s.replicaUpsertPerson(p);
    for (const f of snap.faces) {
      const seq = f.seq as number;
      if (!snap.full && s.replicaHasFace(seq)) continue;
      s.replicaInsertFace(f);
      add.push({ faceKey: seq, personKey: f.person_seq as number, vector: blobToEmbedding(f.embedding as Buffer) });
    }
    s.replicaFinish({
      id: col.id,
      person_count: col.person_count,
      face_count: col.face_count,
      search_revision: col.search_revision,
      change_revision: col.change_revision,
      updated_at: col.updated_at,
    });
    return { add, remove };
  }

  /** The collection as the replica has it (after a write's own sync). */
  collection(id: string): CollectionT | null {
    return this.store.getCollection(id);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.listener.close();
    await Promise.allSettled([...this.chains.values()]);
  }
}
