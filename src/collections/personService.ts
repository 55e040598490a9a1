import { randomUUID } from 'node:crypto';
import { Errors, isApiError } from '../contract/errors.js';
import type { InferenceEngine } from '../inference/engine.js';
import type { LivenessPolicy } from '../inference/faceService.js';
import { faceObservation } from '../inference/observation.js';
import type { AnalyzeResult } from '../inference/pipeline.js';
import type { SearchIndexes } from '../search/indexManager.js';
import { toPage, type CursorCodec, type Page } from '../store/cursors.js';
import { nowIso, type CollectionStore, type NewFace } from './collectionStore.js';
import { detectionProfileOf, type CollectionService } from './collectionService.js';
import {
  checkMetadata,
  type CollectionT,
  type FaceSampleT,
  type PersonPatchT,
  type PersonT,
  type RejectedImageT,
} from '../contract/collections.js';
import type { GalleryWriter } from './galleryWriter.js';
import {
  identityConflict,
  parseExternalEmbeddings,
  reviewImage,
  type RejectionReason,
  type ReviewGates,
  type ReviewMode,
} from './review.js';

export interface RegistrationImage {
  filename: string;
  bytes: Uint8Array;
}

export interface RegistrationInput {
  collectionId: string;
  images: RegistrationImage[];
  reviewMode: ReviewMode;
  embeddingMode: 'server' | 'external_trusted';
  externalEmbeddings?: string | null;
  embeddingContractId?: string | null;
}

export interface NewPersonInput {
  id: string;
  name: string | null;
  external_id: string | null;
  metadata: Record<string, unknown>;
}

type RejectedImage = RejectedImageT & { reason: RejectionReason };

export interface RegistrationLimits {
  maxImages: number;
  maxImageBytes: number;
  maxImagePixels: number;
  maxDetectedFaces: number;
  gates: ReviewGates;
  /** Set when registration evaluates liveness (liveness enabled and liveness_on_registration). */
  liveness?: LivenessPolicy | null;
}

/** Stored crops: the face box resized to 112x112, JPEG quality 92 (as the reference). */
const CROP = { size: 112, quality: 92 };

interface Candidate {
  index: number;
  filename: string;
  analysis: AnalyzeResult;
  external: Float32Array | null;
}

/**
 * Persons and their face samples: registration (review, limits, write, index update), listing, patching
 * and deletes. Inference runs first, outside any transaction; the review and the write then run
 * synchronously in one transaction, so concurrent registrations cannot both take the last slot.
 */
export class PersonService {
  constructor(
    private readonly collections: CollectionService,
    private readonly store: CollectionStore,
    private readonly indexes: SearchIndexes,
    private readonly cursors: CursorCodec,
    private readonly engine: () => InferenceEngine,
    private readonly limits: RegistrationLimits,
    /** Every gallery write (SQLite or PostgreSQL, chosen at composition); reads are the local store's. */
    private readonly writer: GalleryWriter,
  ) {}

  private person(collectionId: string, personId: string) {
    const p = this.store.getPerson(collectionId, personId);
    if (!p) throw Errors.personNotFound(personId);
    return p;
  }

  get(collectionId: string, personId: string): PersonT {
    this.collections.get(collectionId);
    return this.person(collectionId, personId).person;
  }

  list(collectionId: string, q: { cursor?: string | null; limit: number; search?: string | null }): Page<PersonT> {
    this.collections.get(collectionId);
    const search = q.search ? q.search : null;
    const scope = `persons:${collectionId}:${search ?? ''}`;
    const after = q.cursor ? this.cursors.decode(q.cursor, scope) : null;
    return toPage(
      this.store.listPersons(collectionId, after, q.limit + 1, search),
      q.limit,
      (p) => p.id,
      this.cursors,
      scope,
    );
  }

  /** The columns a person patch changes (external_id uniqueness is the caller's check). */
  private static patchColumns(person: PersonT, body: PersonPatchT): Record<string, string | null> {
    const cols: Record<string, string | null> = {};
    if (body.name !== undefined && body.name !== person.name) cols.name = body.name;
    if (body.external_id !== undefined && body.external_id !== person.external_id) cols.external_id = body.external_id;
    if (body.metadata !== undefined && JSON.stringify(body.metadata) !== JSON.stringify(person.metadata))
      cols.metadata_json = JSON.stringify(body.metadata);
    return cols;
  }

  async patch(collectionId: string, personId: string, body: PersonPatchT): Promise<PersonT> {
    if (body.metadata !== undefined) checkMetadata(body.metadata);
    await this.writer.updatePerson(collectionId, personId, (p) => PersonService.patchColumns(p.person, body));
    return this.person(collectionId, personId).person;
  }

  async delete(collectionId: string, personId: string): Promise<void> {
    // The commit is in this box's store and index when this returns (on either engine).
    return this.writer.deletePerson(collectionId, personId);
  }

  listFaces(collectionId: string, personId: string, q: { cursor?: string | null; limit: number }): Page<FaceSampleT> {
    this.collections.get(collectionId);
    const { seq } = this.person(collectionId, personId);
    const scope = `faces:${collectionId}:${personId}`;
    const after = q.cursor ? this.cursors.decode(q.cursor, scope) : null;
    return toPage(this.store.listFaces(seq, after, q.limit + 1), q.limit, (f) => f.id, this.cursors, scope);
  }

  async deleteFace(collectionId: string, personId: string, faceId: string): Promise<void> {
    return this.writer.deleteFace(collectionId, personId, faceId);
  }

  faceImage(collectionId: string, personId: string, faceId: string): Buffer {
    this.collections.get(collectionId);
    const { seq } = this.person(collectionId, personId);
    const face = this.store.getFace(seq, faceId);
    if (!face) throw Errors.faceNotFound({ faceId });
    const crop = this.store.faceCrop(face.seq);
    if (!crop) throw Errors.faceImageNotFound(faceId);
    return crop;
  }

  // ---- registration ----

  /** POST …/persons: 201 with the person, or 422 registration_failed when no image is accepted. */
  createPerson(input: RegistrationInput & { person: NewPersonInput }, signal?: AbortSignal) {
    checkMetadata(input.person.metadata);
    return this.register(input, { create: input.person }, signal);
  }

  /** POST …/persons/{id}/faces: 201 even when every image is rejected. */
  addFaces(input: RegistrationInput & { personId: string }, signal?: AbortSignal) {
    return this.register(input, { personId: input.personId }, signal);
  }

  private async register(
    input: RegistrationInput,
    target: { create: NewPersonInput } | { personId: string },
    signal?: AbortSignal,
  ) {
    const c = this.collections.getBound(input.collectionId);
    // Cheap checks before any inference; they are repeated inside the write.
    if ('create' in target) this.assertPersonFree(c.id, target.create);
    else this.person(c.id, target.personId);
    const { candidates, rejected, externals } = this.prepare(c, input);
    const analysed = await this.analyse(c, candidates, input, rejected, signal);
    return this.commit(input, analysed, rejected, externals, target);
  }

  /** Registration's limits on the collection as the write sees it (locked in fleet mode). */
  private static checkLimits(col: CollectionT, current: number, adding: number): void {
    if (current + adding > col.max_faces_per_person) {
      throw Errors.personFaceLimitExceeded(col.max_faces_per_person, current + adding);
    }
    if (col.face_count + adding > col.capacity_rows) {
      throw Errors.collectionCapacityExceeded(col.capacity_rows, col.face_count + adding);
    }
  }

  private assertPersonFree(collectionId: string, p: NewPersonInput): void {
    if (this.store.getPerson(collectionId, p.id)) throw Errors.personExists({ id: p.id });
    if (p.external_id !== null && this.store.externalIdTaken(collectionId, p.external_id)) {
      throw Errors.personExists({ externalId: p.external_id });
    }
  }

  /** Request-level checks that need no inference (the trusted contract is checked before any model runs). */
  private prepare(c: CollectionT, input: RegistrationInput) {
    const n = input.images.length;
    if (n === 0) throw Errors.invalidRequest({ exact: 'At least one image is required.' }, { field: 'images' });
    if (n > this.limits.maxImages) throw Errors.tooManyImages(this.limits.maxImages, n);
    let externals: (Float32Array | { problem: string })[] | null = null;
    if (input.embeddingMode === 'server') {
      if (input.externalEmbeddings != null || input.embeddingContractId != null) {
        throw Errors.unexpectedExternalEmbedding();
      }
    } else {
      if (input.externalEmbeddings == null) throw Errors.missingExternalEmbeddings();
      if (input.embeddingContractId == null || !input.embeddingContractId.trim())
        throw Errors.missingEmbeddingContractId();
      // Upstream's order: a malformed list or a count mismatch is a 400 before the contract id is compared.
      externals = parseExternalEmbeddings(input.externalEmbeddings, c.embedding_dimension);
      if (!externals) throw Errors.invalidExternalEmbeddings();
      if (externals.length !== n) {
        throw Errors.externalEmbeddingCountMismatch(n, externals.length);
      }
      if (input.embeddingContractId !== c.embedding_contract_id) {
        throw Errors.embeddingContractMismatch(c.embedding_contract_id, input.embeddingContractId);
      }
    }
    const rejected: RejectedImage[] = [];
    const candidates: { index: number; image: RegistrationImage }[] = [];
    input.images.forEach((image, index) => {
      if (image.bytes.byteLength > this.limits.maxImageBytes)
        rejected.push({ index, filename: image.filename, reason: 'image_too_large' });
      else candidates.push({ index, image });
    });
    return { candidates, rejected, externals };
  }

  /** Runs detection (and the recognizer, unless the caller supplies vectors) on every image. */
  private async analyse(
    c: CollectionT,
    list: { index: number; image: RegistrationImage }[],
    input: RegistrationInput,
    rejected: RejectedImage[],
    signal?: AbortSignal,
  ): Promise<Candidate[]> {
    const profile = detectionProfileOf(c);
    const engine = this.engine();
    const out: (Candidate | null)[] = await Promise.all(
      list.map(async ({ index, image }) => {
        try {
          const analysis = await engine.analyze(
            {
              image: { encoded: image.bytes },
              limits: { maxBytes: this.limits.maxImageBytes, maxPixels: this.limits.maxImagePixels },
              profile,
              maxFaces: this.limits.maxDetectedFaces,
              embed: input.embeddingMode === 'server' ? 'selected' : 'none',
              ...(c.save_face_crops ? { cropSelected: CROP } : {}),
              ...(this.limits.liveness
                ? {
                    liveness: {
                      faces: 'selected' as const,
                      mode: this.limits.liveness.mode,
                      threshold: this.limits.liveness.threshold,
                    },
                  }
                : {}),
            },
            signal,
          );
          return { index, filename: image.filename, analysis, external: null };
        } catch (e) {
          // Decode problems reject that image only; anything else (deadline, engine failure) fails the request.
          if (isApiError(e) && (e.code === 'invalid_image' || e.code === 'image_too_large')) {
            rejected.push({ index, filename: image.filename, reason: e.code });
            return null;
          }
          if (isApiError(e) && e.code === 'face_not_found' && e.details.reason === 'degenerate_landmarks') {
            rejected.push({ index, filename: image.filename, reason: 'invalid_embedding' });
            return null;
          }
          throw e;
        }
      }),
    );
    return out.filter((x): x is Candidate => x !== null);
  }

  /** Review + limits + write, synchronously: nothing else runs between the checks and the commit. */
  private async commit(
    input: RegistrationInput,
    analysed: Candidate[],
    rejected: RejectedImage[],
    externals: (Float32Array | { problem: string })[] | null,
    target: { create: NewPersonInput } | { personId: string },
  ) {
    const store = this.store;
    // The collection may have been deleted or re-pinned while inference ran.
    const c = this.collections.getBound(input.collectionId);
    const existing = 'personId' in target ? this.person(c.id, target.personId) : null;
    if ('create' in target) this.assertPersonFree(c.id, target.create);
    const model = {
      model_id: c.model_id,
      model_digest: c.model_digest,
      preprocessing_version: c.preprocessing_version,
    };
    const accepted: {
      index: number;
      filename: string;
      embedding: Float32Array;
      face: NewFace['face'];
      crop: Buffer | null;
    }[] = [];

    const strict = input.reviewMode === 'strict';
    const index = strict ? this.indexes.ready(c) : null;
    const same: Float32Array[] = strict && existing ? store.personEmbeddings(existing.seq) : [];

    for (const cand of analysed.sort((a, b) => a.index - b.index)) {
      const ext = externals?.[cand.index];
      if (ext && !(ext instanceof Float32Array)) {
        // Upstream's entry has no detail field: {index, filename, reason}.
        rejected.push({ index: cand.index, filename: cand.filename, reason: 'invalid_external_embedding' });
        continue;
      }
      const a = cand.analysis;
      // Every rejection of an evaluated image carries its liveness result, whatever the reason.
      const selectedLiveness = a.faces[a.selected]?.liveness;
      const live = selectedLiveness ? { liveness: selectedLiveness } : {};
      const r = reviewImage({
        faces: a.faces,
        selected: a.selected,
        mode: input.reviewMode,
        gates: this.limits.gates,
        dimension: c.embedding_dimension,
        external: ext ?? null,
        liveness: this.limits.liveness,
      });
      if ('reason' in r) {
        rejected.push({ index: cand.index, filename: cand.filename, reason: r.reason, ...live });
        continue;
      }
      if (strict && index) {
        const maxSame = same.length ? Math.max(...same.map((v) => index.scorePair(r.embedding, v))) : null;
        const other = index.searchPersons(r.embedding, 1, { excludePerson: existing?.seq ?? -1 })[0];
        if (identityConflict(maxSame, other?.score ?? null)) {
          const otherPerson = store.personsBySeq([other!.personKey]).get(other!.personKey);
          rejected.push({
            index: cand.index,
            filename: cand.filename,
            reason: 'identity_similarity_conflict',
            same_person_similarity: maxSame,
            other_person_similarity: other!.score,
            other_person_id: otherPerson?.person.id ?? null,
            matched_face_id: store.faceIdsBySeq([other!.faceKey]).get(other!.faceKey) ?? null,
            ...live,
          });
          continue;
        }
        same.push(r.embedding);
      }
      const obs = faceObservation(r.face, a.width, a.height);
      accepted.push({
        index: cand.index,
        filename: cand.filename,
        embedding: r.embedding,
        crop: a.selectedCrop ? Buffer.from(a.selectedCrop) : null,
        face: {
          bounding_box: obs.bbox,
          landmarks: r.face.landmarks.map(([x, y]) => [x, y]),
          detection_score: obs.detection_score,
          quality: obs.quality,
          ...model,
          embedding_source: input.embeddingMode,
          embedding_contract_id: input.embeddingMode === 'external_trusted' ? c.embedding_contract_id : null,
          ...(r.face.liveness ? { liveness: r.face.liveness } : {}),
        },
      });
    }
    // Upstream's order: images that could not be loaded (decode, size) first, then the rest, each by upload index.
    const loadFailure = (r: RejectedImage) => r.reason === 'invalid_image' || r.reason === 'image_too_large';
    rejected.sort((a, b) => Number(loadFailure(b)) - Number(loadFailure(a)) || a.index - b.index);
    if ('create' in target && accepted.length === 0) {
      throw Errors.registrationFailed(rejected);
    }

    const now = nowIso();
    const faces = accepted.map((a) => ({
      id: randomUUID(),
      embedding: a.embedding,
      face: a.face,
      crop: a.crop,
      createdAt: now,
    }));
    // The limits are checked again on the collection as the write locks it (concurrent writes, other boxes).
    const written = await this.writer.addFaces(
      c.id,
      'create' in target ? { create: target.create } : { personId: existing!.person.id },
      faces,
      (col, current) => PersonService.checkLimits(this.collections.checkBound(col), current, accepted.length),
    );
    // This box's store and index already have the commit.
    const person = this.person(c.id, written.personId);
    return {
      person: person.person,
      faces: written.faceIds.map((id) => store.getFace(person.seq, id)!.face),
      rejected_images: rejected,
    };
  }
}
