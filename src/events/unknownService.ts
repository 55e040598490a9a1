import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import sharp from 'sharp';
import type { CollectionService } from '../collections/collectionService.js';
import type { PersonService } from '../collections/personService.js';
import { Errors } from '../contract/errors.js';
import type { HistoryEventT } from '../contract/events.js';
import type { UnknownEnrolT, UnknownListQueryT, UnknownT } from '../contract/unknowns.js';
import type { FaceCrop, UnknownVisit, UnknownVisitors } from '../monitors/trackFaces.js';
import type { ExitReason } from '../contract/monitors.js';
import { toPage, type CursorCodec, type Page } from '../store/cursors.js';
import type { StorageGuard } from '../store/storageGuard.js';
import { enrolImages } from './enrolment.js';
import type { EventService } from './eventService.js';
import { writePrivateFile } from './snapshotStore.js';
import { UnknownClusters } from './unknownClusters.js';
import { fromBlob, toBlob, type UnknownCropRow, type UnknownRow, type UnknownStore } from './unknownStore.js';
import { visitsOf } from './visits.js';

export interface UnknownOptions {
  /** A visit joins the unknown whose centroid it reaches by this cosine ([monitors] unknown_threshold). */
  threshold: number;
  /** Crops kept per unknown ([monitors] unknown_crops). */
  crops: number;
  jpegQuality: number;
  /**
   * Events queued for the history and not written yet (EventHistory.pendingWrites): while there are any, an
   * unknown seen in the last `graceMs` may have its events among them and is not pruned.
   */
  pendingEvents?: () => number;
  graceMs?: number;
  /** How often unknowns without events (retention, deletes) are removed. */
  pruneIntervalMs?: number;
  storage?: StorageGuard;
}

const CROP_NAME = /^[0-9a-f-]{36}\.jpg$/;
const iso = (ms: number) => new Date(ms).toISOString();
const nowIso = () => new Date().toISOString();
/** Unknown ids: short, random, readable (u- and 10 hex digits). */
const newUnknownId = () => `u-${randomBytes(5).toString('hex')}`;

/** A track's contribution to its unknown's centroid, replaced by the final one when the track ends. */
interface OpenVisit {
  unknownId: string;
  template: Float32Array;
  weight: number;
}

/**
 * Unknown visitors (issue 42): announced unknown tracks grouped into unknowns with stable ids (see
 * UnknownClusters for the method), with their sample crops (JPEG, 0600, under <data_dir>/events/unknowns/),
 * and the API on them: list, get, merge, dismiss and restore, enrol as a person, delete (with their events).
 * Visits, cameras and first/last seen come from the event history, so an unknown lives as long as one of its
 * events does. Per box: the clusters are in this box's SQLite database, one set per recognition model.
 */
export class UnknownService implements UnknownVisitors {
  private readonly byModel = new Map<string, UnknownClusters>();
  private readonly openVisits = new Map<string, OpenVisit>();
  private readonly cropDir: string;
  private pruneTimer: NodeJS.Timeout | null = null;
  /** Crop encodes in flight (close() waits for them). */
  private readonly writing = new Set<Promise<void>>();
  readonly counters = { assigned: 0, created: 0, merged: 0, cropsWritten: 0, cropsFailed: 0, pruned: 0 };

  constructor(
    private readonly store: UnknownStore,
    private readonly collections: CollectionService,
    private readonly persons: PersonService,
    private readonly events: EventService,
    private readonly cursors: CursorCodec,
    dataDir: string,
    private readonly o: UnknownOptions,
    private readonly log: Logger,
  ) {
    this.cropDir = join(dataDir, 'events', 'unknowns');
    mkdirSync(this.cropDir, { recursive: true, mode: 0o700 });
  }

  /** Startup: removes crop files without a row (written just before a crash), then prunes on a timer. */
  start(): void {
    const live = this.store.allCropPaths();
    let orphans = 0;
    for (const name of readdirSync(this.cropDir)) {
      if (live.has(name)) continue;
      this.removeFile(name);
      orphans++;
    }
    if (orphans) this.log.info({ files: orphans }, 'removed unknown-visitor crops that had no row');
    this.pruneTimer = setInterval(() => {
      try {
        this.prune();
      } catch (e) {
        this.log.error({ err: e }, 'removing unknown visitors without events failed');
      }
    }, this.o.pruneIntervalMs ?? 5_000);
    this.pruneTimer.unref();
  }

  async close(): Promise<void> {
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.pruneTimer = null;
    await Promise.allSettled([...this.writing]);
  }

  private clusters(model: string): UnknownClusters {
    let c = this.byModel.get(model);
    if (!c) {
      c = new UnknownClusters(this.o.threshold);
      for (const r of this.store.ofModel(model))
        c.load({ id: r.id, sum: fromBlob(r.centroid), weight: r.weight, order: r.ord });
      this.byModel.set(model, c);
    }
    return c;
  }

  private modelOf(collectionId: string): string {
    return this.collections.get(collectionId).embedding_contract_id;
  }

  // ---- the monitors' side (UnknownVisitors) ----

  /** The visit's [monitors] unknown_threshold and unknown_crops (they may change while the daemon runs). */
  private follow(g: UnknownVisit['grouping']): void {
    this.o.threshold = g.threshold;
    this.o.crops = g.crops;
    for (const c of this.byModel.values()) c.threshold = c.mergeThreshold = g.threshold;
  }

  enter(v: UnknownVisit): string | null {
    this.follow(v.grouping);
    try {
      const model = this.modelOf(v.collectionId);
      const clusters = this.clusters(model);
      const at = nowIso();
      const r = this.store.transaction(() => {
        let newId = newUnknownId();
        while (this.store.resolve(newId)) newId = newUnknownId();
        const a = clusters.assign(v.template, v.quality, newId);
        const c = clusters.get(a.id)!;
        if (a.created)
          this.store.insert({
            id: a.id,
            model,
            centroid: toBlob(c.sum),
            weight: c.weight,
            ord: c.order,
            status: 'active',
            enrolled_collection_id: null,
            enrolled_person_id: null,
            first_seen_ms: v.at,
            last_seen_ms: v.at,
            created_at: at,
            updated_at: at,
          });
        else {
          this.store.setCentroid(a.id, c.sum, c.weight, at);
          this.store.seen(a.id, v.at, at);
        }
        return a;
      });
      this.counters.assigned++;
      if (r.created) this.counters.created++;
      this.openVisits.set(`${v.streamEpoch}\0${v.trackId}`, {
        unknownId: r.id,
        template: v.template,
        weight: v.quality,
      });
      return r.id;
    } catch (e) {
      // The event goes out without an unknown_id rather than not at all.
      this.log.error({ err: e, monitor_id: v.monitorId }, 'grouping an unknown visitor failed');
      return null;
    }
  }

  exit(v: UnknownVisit & { unknownId: string; crops: FaceCrop[]; reason: ExitReason | null }): void {
    const key = `${v.streamEpoch}\0${v.trackId}`;
    const open = this.openVisits.get(key);
    this.openVisits.delete(key);
    this.follow(v.grouping);
    try {
      const id = this.store.resolve(open?.unknownId ?? v.unknownId);
      const row = id ? this.store.get(id) : null;
      if (!row) return; // deleted meanwhile
      const clusters = this.clusters(row.model);
      const at = nowIso();
      // A track that turned out to be a known person keeps its visit, but its face does not shape the unknown.
      if (v.reason !== 'identity_changed') {
        if (open) clusters.contribute(row.id, open.template, open.weight, -1);
        clusters.contribute(row.id, v.template, v.quality);
        const c = clusters.get(row.id)!;
        this.store.transaction(() => {
          this.store.setCentroid(row.id, c.sum, c.weight, at);
          this.store.seen(row.id, v.at, at);
        });
        for (const m of clusters.mergeConverged(row.id)) this.merged(m.into, m.from, clusters);
        const target = this.store.resolve(row.id)!;
        if (v.crops.length) this.track(this.writeCrops(target, v.monitorId, v.crops));
      } else this.store.seen(row.id, v.at, at);
    } catch (e) {
      this.log.error({ err: e, monitor_id: v.monitorId }, 'ending an unknown visit failed');
    }
  }

  private track(p: Promise<void>): void {
    this.writing.add(p);
    void p.finally(() => this.writing.delete(p));
  }

  /** The store's side of a merge the clusters already made (automatic or asked for). */
  private merged(into: string, from: string, clusters: UnknownClusters): void {
    const at = nowIso();
    const c = clusters.get(into)!;
    const extra = this.store.transaction(() => {
      this.store.merge(into, from, at);
      this.store.setCentroid(into, c.sum, c.weight, at);
      return this.store.trimCrops(into, this.o.crops);
    });
    for (const p of extra) this.removeFile(p);
    for (const v of this.openVisits.values()) if (v.unknownId === from) v.unknownId = into;
    this.counters.merged++;
    this.log.info({ into, from }, 'unknown visitors merged');
  }

  /** Encodes the crops that beat the unknown's kept ones, writes them (0600), keeps the best `crops`. */
  private async writeCrops(unknownId: string, monitorId: string, crops: FaceCrop[]): Promise<void> {
    const kept = this.store.crops(unknownId);
    const worst = kept.length >= this.o.crops ? kept[kept.length - 1]!.quality : -Infinity;
    const better = crops.filter((c) => c.quality > worst).slice(0, this.o.crops);
    for (const c of better) {
      if (this.o.storage?.isFull()) return;
      const id = randomUUID();
      const name = `${id}.jpg`;
      try {
        const jpeg = await sharp(c.data, { raw: { width: c.width, height: c.height, channels: 3 } })
          .jpeg({ quality: Math.max(this.o.jpegQuality, 90) })
          .toBuffer();
        await writePrivateFile(join(this.cropDir, name), jpeg);
        const target = this.store.resolve(unknownId);
        const removed = target
          ? this.store.transaction(() => {
              this.store.addCrop({
                id,
                unknown_id: target,
                path: name,
                quality: c.quality,
                width: c.width,
                height: c.height,
                bytes: jpeg.length,
                monitor_id: monitorId,
                seen_ms: c.at,
              });
              return this.store.trimCrops(target, this.o.crops);
            })
          : [name];
        for (const p of removed) this.removeFile(p);
        this.counters.cropsWritten++;
      } catch (e) {
        this.removeFile(name);
        this.counters.cropsFailed++;
        this.log.warn({ err: (e as Error).message, unknown_id: unknownId }, 'unknown visitor crop not written');
      }
    }
  }

  private removeFile(name: string): void {
    if (!CROP_NAME.test(name) && !name.endsWith('.tmp')) return;
    try {
      unlinkSync(join(this.cropDir, name));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }

  // ---- retention ----

  /** Removes the unknowns none of whose events is left in the history (retention, deletes). */
  prune(nowMs = Date.now()): number {
    const busy = (this.o.pendingEvents?.() ?? 0) > 0;
    const ids = this.store.withoutEvents(busy ? nowMs - (this.o.graceMs ?? 120_000) : nowMs + 1);
    for (const id of ids) this.remove(id);
    this.counters.pruned += ids.length;
    if (ids.length) this.log.info({ unknowns: ids.length }, 'unknown visitors without events removed');
    return ids.length;
  }

  private remove(id: string): void {
    const row = this.store.get(id);
    const paths = this.store.transaction(() => this.store.delete(id));
    for (const p of paths) this.removeFile(p);
    if (row) this.byModel.get(row.model)?.remove(id);
  }

  // ---- the API ----

  private row(id: string): UnknownRow {
    const resolved = this.store.resolve(id);
    const r = resolved ? this.store.get(resolved) : null;
    if (!r) throw Errors.unknownNotFound(id);
    return r;
  }

  private views(rows: UnknownRow[]): UnknownT[] {
    const activity = this.store.activity(rows.map((r) => r.id));
    return rows.map((r) => {
      const a = activity.get(r.id);
      return {
        id: r.id,
        status: r.status,
        first_seen_at: iso(a?.first_ms ?? r.first_seen_ms),
        last_seen_at: iso(Math.max(a?.last_ms ?? 0, r.last_seen_ms)),
        visits: a?.visits ?? 0,
        cameras: a?.cameras ?? [],
        crops: this.store.crops(r.id).map((c) => cropView(c)),
        enrolled_as:
          r.enrolled_collection_id && r.enrolled_person_id
            ? { collection_id: r.enrolled_collection_id, person_id: r.enrolled_person_id }
            : null,
        merged_ids: this.store.aliasesOf(r.id),
        model: r.model,
      };
    });
  }

  list(q: UnknownListQueryT): Page<UnknownT> {
    const statuses: UnknownRow['status'][] = q.status === 'all' ? ['active', 'dismissed', 'enrolled'] : [q.status];
    const scope = `unknowns:${q.status}:${q.monitor_id ?? ''}`;
    let after: { ms: number; id: string } | null = null;
    if (q.cursor) {
      const raw = this.cursors.decode(q.cursor, scope);
      const sep = raw.indexOf(':');
      after = { ms: Number(raw.slice(0, sep)), id: raw.slice(sep + 1) };
      if (sep < 0 || !Number.isSafeInteger(after.ms)) throw Errors.invalidCursor('malformed');
    }
    const rows = this.store.list(statuses, after, q.limit + 1, q.monitor_id ?? null);
    const page = toPage(rows, q.limit, (r) => `${r.last_seen_ms}:${r.id}`, this.cursors, scope);
    return { items: this.views(page.items), next_cursor: page.next_cursor };
  }

  /** The unknown (a merged-away id gives the one it joined), its visits and newest events. */
  async get(id: string) {
    const r = this.row(id);
    // Its own events, and (fleet mode) the copies forwarded under an id merged into it before the merge.
    const events: HistoryEventT[] = [];
    for (const u of [r.id, ...this.store.aliasesOf(r.id)])
      events.push(...(await this.events.list({ unknown_id: u, limit: 500 })).items);
    const unique = [...new Map(events.map((e) => [e.id, e])).values()].sort((a, b) =>
      a.occurred_at < b.occurred_at ? 1 : a.occurred_at > b.occurred_at ? -1 : 0,
    );
    return {
      unknown: this.views([r])[0]!,
      visits: visitsOf(unique).slice(0, 100),
      events: unique.slice(0, 50),
    };
  }

  async crop(id: string, cropId: string): Promise<Buffer> {
    const r = this.row(id);
    const c = this.store.crop(r.id, cropId);
    if (!c) throw Errors.unknownCropNotFound(id, cropId);
    try {
      return await readFile(join(this.cropDir, c.path));
    } catch {
      throw Errors.unknownCropNotFound(id, cropId);
    }
  }

  /** Every unknown of `others` joins `id`: events, crops (the best kept) and ids; the clusters follow. */
  async merge(id: string, others: string[]) {
    const into = this.row(id);
    const rows = [...new Map(others.map((o) => this.row(o)).map((r) => [r.id, r])).values()];
    if (rows.some((r) => r.id === into.id))
      throw Errors.invalidRequest('unknown_ids: an unknown cannot be merged into itself', { field: 'unknown_ids' });
    const models = [...new Set([into.model, ...rows.map((r) => r.model)])];
    if (models.length > 1) throw Errors.unknownModelMismatch([into.id, ...rows.map((r) => r.id)], models);
    const clusters = this.clusters(into.model);
    for (const r of rows) {
      clusters.merge(into.id, r.id);
      this.merged(into.id, r.id, clusters);
    }
    return this.get(into.id);
  }

  setStatus(id: string, status: 'active' | 'dismissed'): UnknownT {
    const r = this.row(id);
    // An enrolled unknown stays enrolled (its person exists); dismissing it hides it all the same.
    this.store.setStatus(r.id, r.status === 'enrolled' && status === 'active' ? 'enrolled' : status, nowIso());
    return this.views([this.store.get(r.id)!])[0]!;
  }

  /**
   * Its best crops become the faces of a new or existing person through the normal registration (review,
   * limits); the unknown is then marked enrolled (its events keep their unknown_id).
   */
  async enrol(id: string, body: UnknownEnrolT, signal?: AbortSignal) {
    const r = this.row(id);
    const crops = this.store.crops(r.id).slice(0, body.max_crops);
    if (!crops.length) throw Errors.unknownNotEnrollable(r.id, 'it has no sample crop yet');
    const collectionId = body.collection_id ?? this.store.lastCollection(r.id);
    if (!collectionId)
      throw Errors.invalidRequest('collection_id: none of its events names a collection; give one', {
        field: 'collection_id',
      });
    this.collections.get(collectionId);
    const images = await Promise.all(
      crops.map(async (c) => ({
        filename: `crop-${c.id}.jpg`,
        bytes: await readFile(join(this.cropDir, c.path)).catch(() => {
          throw Errors.unknownNotEnrollable(r.id, 'a crop file is missing');
        }),
      })),
    );
    const result = await enrolImages(this.persons, collectionId, images, body, { enrolled_from_unknown: r.id }, signal);
    if (result.faces.length > 0)
      this.store.setStatus(r.id, 'enrolled', nowIso(), { collection_id: collectionId, person_id: body.person_id });
    return { unknown: this.views([this.store.get(r.id)!])[0]!, ...result };
  }

  /** Deletes the unknown with its events (and their pictures) and its crops. */
  async delete(id: string): Promise<void> {
    const r = this.row(id);
    for (const u of [r.id, ...this.store.aliasesOf(r.id)])
      await this.events.deleteRange({ unknown_id: u, type: undefined, unknown_only: undefined });
    this.remove(r.id);
  }
}

function cropView(c: UnknownCropRow) {
  return {
    id: c.id,
    url: `/v1/unknowns/${c.unknown_id}/crops/${c.id}`,
    quality: c.quality,
    width: c.width,
    height: c.height,
    monitor_id: c.monitor_id,
    seen_at: iso(c.seen_ms),
  };
}
