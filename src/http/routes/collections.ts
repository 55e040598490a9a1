import { Errors } from '../../contract/errors.js';
import type { z } from 'zod';
import {
  CollectionCreate,
  CollectionPatch,
  isValidPersonId,
  PersonPatch,
  type CollectionCreateT,
  type CollectionPatchT,
  type PersonPatchT,
} from '../../contract/collections.js';
import type { RegistrationInput } from '../../collections/personService.js';
import { faceObservation, processingMs } from '../../inference/observation.js';
import {
  AddFacesBody,
  CollectionPageResponse,
  CollectionResponse,
  CreatePersonBody,
  DeleteCollectionQuery,
  FacePageResponse,
  FaceRegistrationResponse,
  ListQuery,
  PersonListQuery,
  PersonPageResponse,
  PersonRegistrationResponse,
  PersonResponse,
  SearchBody,
  SearchResponse,
} from '../../contract/collections.js';
import { readJson, readQuery } from '../input.js';
import { parseMultipart, type UploadedFile } from '../multipart.js';
import { requireInference } from '../ready.js';
import type { AppContext, RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

// The form fields besides the files, built once: a zod schema made per request is compiled again each time.
const CreatePersonFields = CreatePersonBody.omit({ images: true });
const AddFacesFields = AddFacesBody.omit({ images: true });
const SearchFields = SearchBody.omit({ image: true });

const C = '/v1/collections/{collection_id}';
const P = `${C}/persons/{person_id}`;

export function collectionRoutes(rt: Runtime): RouteSpec[] {
  const s = rt.loaded.config.server;
  const json = <T>(ctx: AppContext, schema: Parameters<typeof readJson>[1]) =>
    readJson(ctx, schema, s.max_request_bytes) as Promise<T>;
  const col = rt.collections,
    persons = rt.persons;
  const registrationForm = <F>(ctx: AppContext, schema: Parameters<typeof parseMultipart>[1]['fields']) =>
    parseMultipart(ctx, {
      fields: schema,
      requiredFiles: [],
      // Per-image size is a per-image rejection in registration, so parts may be as large as the body limit.
      maxFileBytes: s.max_request_bytes,
      maxFiles: s.max_registration_images,
      tooManyFiles: () => Errors.tooManyImages(s.max_registration_images),
    }) as Promise<{ fields: F; files: UploadedFile[] }>;
  const images = (files: UploadedFile[]) =>
    files.filter((f) => f.field === 'images').map((f) => ({ filename: f.filename, bytes: f.bytes }));
  const registration = (fields: {
    review_mode: RegistrationInput['reviewMode'];
    embedding_mode: RegistrationInput['embeddingMode'];
    external_embeddings?: string | null;
    embedding_contract_id?: string | null;
  }) => ({
    reviewMode: fields.review_mode,
    embeddingMode: fields.embedding_mode,
    externalEmbeddings: fields.external_embeddings ?? null,
    embeddingContractId: fields.embedding_contract_id ?? null,
  });

  return [
    {
      method: 'post',
      path: '/v1/collections',
      operationId: 'create_collection_v1_collections_post',
      summary: 'Create Collection',
      tags: ['collections'],
      role: 'operator',
      description: 'Create a collection pinned to the active model. threshold is stored as default_threshold.',
      body: { contentType: 'application/json', schema: CollectionCreate },
      success: { status: 201, schema: CollectionResponse },
      handler: async (ctx) => {
        requireInference(rt);
        const body = await json<CollectionCreateT>(ctx, CollectionCreate);
        ctx.status = 201;
        ctx.body = { request_id: ctx.state.requestId, collection: col.describe(await col.create(body)) };
      },
    },
    {
      method: 'get',
      path: '/v1/collections',
      operationId: 'list_collections_v1_collections_get',
      summary: 'List Collections',
      tags: ['collections'],
      role: 'operator',
      query: ListQuery,
      success: { status: 200, schema: CollectionPageResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, ListQuery);
        const page = col.list(q.cursor, q.limit);
        ctx.body = {
          request_id: ctx.state.requestId,
          collections: page.items.map((c) => col.describe(c)),
          next_cursor: page.next_cursor,
        };
      },
    },
    {
      method: 'get',
      path: C,
      operationId: 'get_collection_v1_collections__collection_id__get',
      summary: 'Get Collection',
      tags: ['collections'],
      role: 'operator',
      success: { status: 200, schema: CollectionResponse },
      handler: async (ctx) => {
        ctx.body = {
          request_id: ctx.state.requestId,
          collection: col.describe(col.getBound(ctx.params.collection_id!)),
        };
      },
    },
    {
      method: 'patch',
      path: C,
      operationId: 'patch_collection_v1_collections__collection_id__patch',
      summary: 'Patch Collection',
      tags: ['collections'],
      role: 'operator',
      description:
        'Explicit nulls and unknown fields are rejected; search.profile cannot change. A no-op field bumps nothing.',
      body: { contentType: 'application/json', schema: CollectionPatch },
      success: { status: 200, schema: CollectionResponse },
      handler: async (ctx) => {
        const body = await json<CollectionPatchT>(ctx, CollectionPatch);
        ctx.body = {
          request_id: ctx.state.requestId,
          collection: col.describe(await col.patch(ctx.params.collection_id!, body)),
        };
      },
    },
    {
      method: 'delete',
      path: C,
      operationId: 'delete_collection_v1_collections__collection_id__delete',
      summary: 'Delete Collection',
      tags: ['collections'],
      role: 'operator',
      query: DeleteCollectionQuery,
      success: { status: 204, schema: null },
      handler: async (ctx) => {
        const q = readQuery(ctx, DeleteCollectionQuery);
        await col.delete(ctx.params.collection_id!, q.force, (id) => rt.monitors.inUse(id));
        ctx.status = 204;
      },
    },
    {
      method: 'post',
      path: `${C}/persons`,
      operationId: 'create_person_v1_collections__collection_id__persons_post',
      summary: 'Create Person',
      tags: ['persons'],
      role: 'operator',
      description:
        'Register a person from one or more images, allowing partial success (201 with rejected_images). 422 registration_failed when every image is rejected.',
      body: { contentType: 'multipart/form-data', schema: CreatePersonBody },
      success: { status: 201, schema: PersonRegistrationResponse },
      handler: async (ctx) => {
        requireInference(rt);
        const { fields, files } = await registrationForm<z.infer<typeof CreatePersonBody>>(ctx, CreatePersonFields);
        const personId = fields.id ?? crypto.randomUUID();
        if (!isValidPersonId(personId)) throw Errors.invalidPersonId(personId);
        let metadata: unknown;
        try {
          metadata = JSON.parse(fields.metadata);
        } catch {
          throw Errors.invalidMetadata();
        }
        if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata)) throw Errors.invalidMetadata();
        const r = await persons.createPerson(
          {
            collectionId: ctx.params.collection_id!,
            images: images(files),
            ...registration(fields),
            person: {
              id: personId,
              name: fields.name ?? null,
              external_id: fields.external_id ?? null,
              metadata: metadata as Record<string, unknown>,
            },
          },
          ctx.state.signal,
        );
        ctx.status = 201;
        ctx.body = { request_id: ctx.state.requestId, ...r };
      },
    },
    {
      method: 'get',
      path: `${C}/persons`,
      operationId: 'list_persons_v1_collections__collection_id__persons_get',
      summary: 'List Persons',
      tags: ['persons'],
      role: 'operator',
      description:
        'search is a case-insensitive substring match on id, name and external_id; the cursor is bound to it.',
      query: PersonListQuery,
      success: { status: 200, schema: PersonPageResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, PersonListQuery);
        const page = persons.list(ctx.params.collection_id!, q);
        ctx.body = { request_id: ctx.state.requestId, persons: page.items, next_cursor: page.next_cursor };
      },
    },
    {
      method: 'get',
      path: P,
      operationId: 'get_person_v1_collections__collection_id__persons__person_id__get',
      summary: 'Get Person',
      tags: ['persons'],
      role: 'operator',
      success: { status: 200, schema: PersonResponse },
      handler: async (ctx) => {
        ctx.body = {
          request_id: ctx.state.requestId,
          person: persons.get(ctx.params.collection_id!, ctx.params.person_id!),
        };
      },
    },
    {
      method: 'patch',
      path: P,
      operationId: 'patch_person_v1_collections__collection_id__persons__person_id__patch',
      summary: 'Patch Person',
      tags: ['persons'],
      role: 'operator',
      description: 'name and external_id may be null; metadata may not. Unknown fields are rejected.',
      body: { contentType: 'application/json', schema: PersonPatch },
      success: { status: 200, schema: PersonResponse },
      handler: async (ctx) => {
        const body = await json<PersonPatchT>(ctx, PersonPatch);
        ctx.body = {
          request_id: ctx.state.requestId,
          person: await persons.patch(ctx.params.collection_id!, ctx.params.person_id!, body),
        };
      },
    },
    {
      method: 'delete',
      path: P,
      operationId: 'delete_person_v1_collections__collection_id__persons__person_id__delete',
      summary: 'Delete Person',
      tags: ['persons'],
      role: 'operator',
      success: { status: 204, schema: null },
      handler: async (ctx) => {
        await persons.delete(ctx.params.collection_id!, ctx.params.person_id!);
        ctx.status = 204;
      },
    },
    {
      method: 'post',
      path: `${P}/faces`,
      operationId: 'add_faces_v1_collections__collection_id__persons__person_id__faces_post',
      summary: 'Add Faces',
      tags: ['persons'],
      role: 'operator',
      description: 'Add images to an existing person, allowing partial success. 201 even when every image is rejected.',
      body: { contentType: 'multipart/form-data', schema: AddFacesBody },
      success: { status: 201, schema: FaceRegistrationResponse },
      handler: async (ctx) => {
        requireInference(rt);
        const { fields, files } = await registrationForm<z.infer<typeof AddFacesBody>>(ctx, AddFacesFields);
        const r = await persons.addFaces(
          {
            collectionId: ctx.params.collection_id!,
            personId: ctx.params.person_id!,
            images: images(files),
            ...registration(fields),
          },
          ctx.state.signal,
        );
        ctx.status = 201;
        ctx.body = { request_id: ctx.state.requestId, faces: r.faces, rejected_images: r.rejected_images };
      },
    },
    {
      method: 'get',
      path: `${P}/faces`,
      operationId: 'list_faces_v1_collections__collection_id__persons__person_id__faces_get',
      summary: 'List Faces',
      tags: ['persons'],
      role: 'operator',
      query: ListQuery,
      success: { status: 200, schema: FacePageResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, ListQuery);
        const page = persons.listFaces(ctx.params.collection_id!, ctx.params.person_id!, q);
        ctx.body = { request_id: ctx.state.requestId, faces: page.items, next_cursor: page.next_cursor };
      },
    },
    {
      method: 'delete',
      path: `${P}/faces/{face_id}`,
      operationId: 'delete_face_v1_collections__collection_id__persons__person_id__faces__face_id__delete',
      summary: 'Delete Face',
      tags: ['persons'],
      role: 'operator',
      success: { status: 204, schema: null },
      handler: async (ctx) => {
        await persons.deleteFace(ctx.params.collection_id!, ctx.params.person_id!, ctx.params.face_id!);
        ctx.status = 204;
      },
    },
    {
      method: 'get',
      path: `${P}/faces/{face_id}/image`,
      operationId: 'get_face_image_v1_collections__collection_id__persons__person_id__faces__face_id__image_get',
      summary: 'Get Face Image',
      tags: ['persons'],
      role: 'operator',
      success: { status: 200, schema: null, media: 'image/jpeg', description: 'Saved 112 x 112 face crop' },
      handler: async (ctx) => {
        const jpeg = persons.faceImage(ctx.params.collection_id!, ctx.params.person_id!, ctx.params.face_id!);
        ctx.set('Cache-Control', 'no-store');
        ctx.type = 'image/jpeg';
        ctx.body = jpeg;
      },
    },
    {
      method: 'post',
      path: `${C}/search`,
      operationId: 'search_v1_collections__collection_id__search_post',
      summary: 'Search',
      tags: ['search'],
      role: 'operator',
      audit: false,
      description:
        'Search the collection using the selected face. Each person scores its best face sample; matches are at or above the threshold, by similarity then person id. ' +
        'With faces=all (Vigil extension) every detected face is searched and returned in faces[] with its box; searched_face and matches stay those of the selected face.',
      body: { contentType: 'multipart/form-data', schema: SearchBody },
      success: { status: 200, schema: SearchResponse },
      handler: async (ctx) => {
        const inf = requireInference(rt);
        const { fields, files } = await parseMultipart(ctx, {
          fields: SearchFields,
          requiredFiles: ['image'],
          maxFileBytes: s.max_image_bytes,
          maxFiles: 1,
        });
        if (fields.face_selection !== undefined && fields.face_selection !== null) {
          throw Errors.requestDetectionOverrideNotSupported(
            'face_selection',
            'the collection detection profile selects the face.',
          );
        }
        const t0 = performance.now();
        const query = {
          collectionId: ctx.params.collection_id!,
          image: files[0]!.bytes,
          limit: fields.limit,
          threshold: fields.threshold,
        };
        if (fields.faces === 'all') {
          const r = await inf.search.searchAll(query, ctx.state.signal);
          const faces = r.results.map((x, i) => ({
            face: faceObservation(x.face, r.width, r.height),
            selected: i === r.selected,
            matches: x.matches,
            ...(x.problem ? { problem: x.problem } : {}),
          }));
          const selected = faces[r.selected]!;
          ctx.body = {
            request_id: ctx.state.requestId,
            searched_face: selected.face,
            matches: selected.matches,
            threshold: r.threshold,
            faces,
            processing_ms: processingMs(t0),
          };
          return;
        }
        const r = await inf.search.search(query, ctx.state.signal);
        ctx.body = {
          request_id: ctx.state.requestId,
          searched_face: faceObservation(r.query.face, r.query.width, r.query.height),
          matches: r.matches,
          threshold: r.threshold,
          processing_ms: processingMs(t0),
        };
      },
    },
  ];
}
