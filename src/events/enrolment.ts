import type { PersonService, RegistrationImage } from '../collections/personService.js';

/** What an enrolment from the camera side asks for (an event's crop or an unknown visitor's crops). */
export interface EnrolRequest {
  person_id: string;
  create: boolean;
  name?: string | null | undefined;
  external_id?: string | null | undefined;
  review_mode: 'off' | 'standard' | 'strict';
}

/**
 * Registers camera crops through the normal registration: detection on each image, the review of
 * `review_mode`, the collection's limits and the index update. create=true makes the person (422
 * registration_failed when no image is accepted); else the faces join an existing person (201 even when every
 * image is rejected, with rejected_images).
 */
export async function enrolImages(
  persons: PersonService,
  collectionId: string,
  images: RegistrationImage[],
  body: EnrolRequest,
  metadata: Record<string, unknown>,
  signal?: AbortSignal,
) {
  const input = { collectionId, images, reviewMode: body.review_mode, embeddingMode: 'server' as const };
  if (body.create) {
    const created = await persons.createPerson(
      {
        ...input,
        person: { id: body.person_id, name: body.name ?? null, external_id: body.external_id ?? null, metadata },
      },
      signal,
    );
    return { created: true, ...created };
  }
  const added = await persons.addFaces({ ...input, personId: body.person_id }, signal);
  return {
    created: false,
    faces: added.faces,
    rejected_images: added.rejected_images,
    person: persons.get(collectionId, body.person_id),
  };
}
