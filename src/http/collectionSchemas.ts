import { z } from 'zod';
import { Collection, FaceSample, Person, RejectedImage } from '../collections/model.js';
import { FaceObservation, filePart, formField, formInt, formNumber, formString } from './schemas.js';

/** Wire schemas of the collections / persons / search routes (InsightFace Server 0.3.x names). */
const id = (name: string) => ({ id: name });
const requestId = z.uuid();
const nextCursor = z.string().nullable();

export const CollectionResponse = z.looseObject({ request_id: requestId, collection: Collection }).meta(id('CollectionResponse'));
export const CollectionPageResponse = z.looseObject({ request_id: requestId, collections: z.array(Collection), next_cursor: nextCursor }).meta(id('CollectionPageResponse'));
export const PersonResponse = z.looseObject({ request_id: requestId, person: Person }).meta(id('PersonResponse'));
export const PersonPageResponse = z.looseObject({ request_id: requestId, persons: z.array(Person), next_cursor: nextCursor }).meta(id('PersonPageResponse'));
export const FacePageResponse = z.looseObject({ request_id: requestId, faces: z.array(FaceSample), next_cursor: nextCursor }).meta(id('FacePageResponse'));
export const PersonRegistrationResponse = z
  .looseObject({ request_id: requestId, person: Person, faces: z.array(FaceSample), rejected_images: z.array(RejectedImage) })
  .meta(id('PersonRegistrationResponse'));
export const FaceRegistrationResponse = z
  .looseObject({ request_id: requestId, faces: z.array(FaceSample), rejected_images: z.array(RejectedImage) })
  .meta(id('FaceRegistrationResponse'));
export const Match = z.looseObject({ person: Person, similarity: z.number(), matched_face_id: z.string() }).meta(id('Match'));
export const SearchResponse = z
  .looseObject({ request_id: requestId, searched_face: FaceObservation, matches: z.array(Match), threshold: z.number(), processing_ms: z.number() })
  .meta(id('SearchResponse'));

const registrationFields = {
  images: z.array(filePart('Images')),
  review_mode: formField(z.enum(['off', 'standard', 'strict']).default('off')),
  embedding_mode: formField(z.enum(['server', 'external_trusted']).default('server')),
  external_embeddings: formString(),
  embedding_contract_id: formString(z.string().max(256)),
};
export const CreatePersonBody = z
  .object({
    ...registrationFields,
    id: formString(),
    name: formString(z.string().max(200)),
    external_id: formString(z.string().max(200)),
    metadata: z.string().default('{}'),
  })
  .meta(id('Body_create_person_v1_collections__collection_id__persons_post'));
export const AddFacesBody = z.object(registrationFields).meta(id('Body_add_faces_v1_collections__collection_id__persons__person_id__faces_post'));
export const SearchBody = z
  .object({
    image: filePart('Image'),
    limit: formInt(1, 100, 5),
    threshold: formNumber(z.number().min(0).max(1)),
    face_selection: formString().meta({ deprecated: true }),
  })
  .meta(id('Body_search_v1_collections__collection_id__search_post'));

export const ListQuery = z.object({ limit: formInt(1, 100, 50), cursor: z.string().nullish() });
export const PersonListQuery = z.object({ limit: formInt(1, 100, 50), cursor: z.string().nullish(), search: z.string().max(200).nullish() });
const BOOLEAN_WORDS: Record<string, boolean> = { true: true, '1': true, yes: true, on: true, false: false, '0': false, no: false, off: false };
export const DeleteCollectionQuery = z.object({
  force: z.preprocess((v) => (typeof v === 'string' ? (BOOLEAN_WORDS[v.toLowerCase()] ?? v) : v), z.boolean().default(false)),
});
