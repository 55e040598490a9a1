/**
 * The error catalogue: every error code of the service is defined here once, with its HTTP status, what
 * it means (the error table of docs/api.md is generated from this list) and how its message and details are
 * built. Code anywhere throws `Errors.someCode(...)`; the HTTP layer shapes an `ApiError` once into the
 * `{error:{code,message,details},request_id}` envelope, MCP returns it as a tool error, and the CLI
 * prints `code: message`. `OperatorError`s are failures of configuration, the command line or files on
 * disk: they stop a command or the start-up and are never an HTTP response.
 */

type Details = Record<string, unknown>;
type Headers = Record<string, string>;

/** Only this module constructs errors: a code exists because the catalogue defines it. */
const CATALOGUE = Symbol('error catalogue');

/** Anything with a catalogue code. */
export class VigilError extends Error {
  readonly code: string;
  readonly details: Details;
  constructor(token: typeof CATALOGUE, code: string, message: string, details: Details) {
    if (token !== CATALOGUE) throw new TypeError('errors are made by the catalogue in src/contract/errors.ts');
    super(message);
    this.name = 'VigilError';
    this.code = code;
    this.details = details;
  }
}

/** An error a client of the API gets, in the envelope, with this status. */
export class ApiError extends VigilError {
  readonly status: number;
  /** Extra response headers (e.g. WWW-Authenticate on 401). */
  readonly headers: Headers;
  constructor(
    token: typeof CATALOGUE,
    status: number,
    code: string,
    message: string,
    details: Details,
    headers: Headers,
  ) {
    super(token, code, message, details);
    this.name = 'ApiError';
    this.status = status;
    this.headers = headers;
  }

  /** The same error with more details (e.g. which side of a compare failed). */
  withDetails(extra: Details): ApiError {
    return new ApiError(CATALOGUE, this.status, this.code, this.message, { ...this.details, ...extra }, this.headers);
  }

  /**
   * An error made by the catalogue in another thread or process (inference worker, scrape worker) or by
   * the daemon's REST API (the MCP stdio bridge), revived as it was.
   */
  static revive(e: { status: number; code: string; message: string; details?: Details; headers?: Headers }): ApiError {
    return new ApiError(CATALOGUE, e.status, e.code, e.message, e.details ?? {}, e.headers ?? {});
  }

  /** The error of a daemon's error answer (its `{error: {code, message, details}}` envelope), for the REST API's own clients. */
  static fromEnvelope(
    status: number,
    body: { error?: { code?: string; message?: string; details?: Details } },
  ): ApiError {
    const e = body.error;
    if (!e?.code) return new ApiError(CATALOGUE, status, 'http_error', `HTTP ${status}`, {}, {});
    return new ApiError(CATALOGUE, status, e.code, e.message ?? `HTTP ${status}`, e.details ?? {}, {});
  }
}

/** A failure the operator must fix (configuration, command line, files on disk): one line, then exit (codes: src/cli/exitCodes.ts). */
export class OperatorError extends VigilError {
  constructor(token: typeof CATALOGUE, code: string, message: string, details: Details) {
    super(token, code, message, details);
    this.name = 'OperatorError';
  }
}

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;
export const isVigilError = (e: unknown): e is VigilError => e instanceof VigilError;

/**
 * One catalogue entry, as the error table of docs/api.md lists it: an HTTP response (with its status), an operator
 * error (CLI / start-up), or a condition reported in a monitor's state and events.
 */
export interface ErrorSpec {
  code: string;
  status: number | null;
  meaning: string;
  kind: 'response' | 'operator' | 'monitor' | 'problem';
}

interface Shaped {
  message: string;
  details?: Details;
  headers?: Headers;
  status?: number;
}
const specs: ErrorSpec[] = [];

function api<const C extends string, A extends unknown[]>(
  code: C,
  status: number,
  meaning: string,
  shape: (...args: A) => Shaped,
) {
  specs.push({ code, status, meaning, kind: 'response' });
  const make = (...args: A): ApiError => {
    const s = shape(...args);
    return new ApiError(CATALOGUE, s.status ?? status, code, s.message, s.details ?? {}, s.headers ?? {});
  };
  return Object.assign(make, { code, status, meaning });
}

function operator<const C extends string, A extends unknown[]>(
  code: C,
  meaning: string,
  shape: (...args: A) => Shaped,
) {
  specs.push({ code, status: null, meaning, kind: 'operator' });
  const make = (...args: A): OperatorError => {
    const s = shape(...args);
    return new OperatorError(CATALOGUE, code, s.message, s.details ?? {});
  };
  return Object.assign(make, { code, meaning });
}

/**
 * A problem a scrape run reports about one item or one source (`sources[].problems`) while it still
 * delivers the rest: never thrown, never an HTTP response; it makes the run `partial`.
 */
function scrapeProblem<const C extends string, A extends unknown[]>(
  code: C,
  meaning: string,
  shape: (...args: A) => Shaped,
) {
  specs.push({ code, status: null, meaning, kind: 'problem' });
  return Object.assign(
    (...args: A) => {
      const s = shape(...args);
      return { code, message: s.message, details: s.details ?? {} };
    },
    { code, meaning },
  );
}

/** A condition a monitor reports in `last_error` and `monitor_error` events (never thrown). */
function monitorCondition<const C extends string, A extends unknown[]>(
  code: C,
  meaning: string,
  shape: (...args: A) => Shaped,
) {
  specs.push({ code, status: null, meaning, kind: 'monitor' });
  return Object.assign((...args: A) => ({ code, message: shape(...args).message }), { code, meaning });
}

const q = (v: string) => JSON.stringify(v);
/** Upstream's not-found quoting: 'id' (Python's f-string with single quotes, no escaping). */
const sq = (v: string) => `'${v}'`;
const fixed = (message: string) => () => ({ message });
const withReason = (reason: string) => ({ message: reason });
const withOptions = (message: string, o: { details?: Details; status?: number } = {}) => ({ message, ...o });

/** Messages that are part of the upstream wire contract, verbatim. */
export const Messages = {
  faceNotFound: 'No usable face was detected.',
  invalidImage: 'Only JPEG, PNG, WebP, and BMP images are supported.',
  undecodableImage: 'The image could not be decoded.',
  emptyImage: 'The image is empty.',
  internal: 'The server could not complete the request.',
  serviceNotReady: 'The service is starting: models are loading. Retry shortly.',
  invalidCursor: 'The cursor is invalid or belongs to another list.',
} as const;

export const Errors = {
  // ---- requests ----
  invalidRequest: api(
    'invalid_request',
    400,
    'The request (body, query or form field) did not validate; `details.field` names the field.',
    (reason: string | { exact: string }, details: Details = {}) => ({
      message: typeof reason === 'string' ? `Request validation failed: ${reason}` : reason.exact,
      details,
    }),
  ),
  invalidCursor: api(
    'invalid_cursor',
    400,
    'The cursor is malformed, tampered with or belongs to another list.',
    (reason: string) => ({ message: Messages.invalidCursor, details: { reason } }),
  ),
  requestTooLarge: api(
    'request_too_large',
    413,
    'The request body is larger than `[server] max_request_bytes` (a JSON body: 1 MiB, or that when smaller); `details.max_request_bytes` is the limit that applied.',
    // Upstream's text; the limit is a Vigil addition in details.
    (maxBytes?: number) =>
      maxBytes === undefined
        ? { message: 'The request body is too large.' }
        : { message: 'The request body is too large.', details: { max_request_bytes: maxBytes } },
  ),
  jsonRequired: api(
    'json_required',
    415,
    'The action needs a JSON body.',
    fixed('Send Content-Type: application/json with the body {}.'),
  ),
  routeNotFound: api('route_not_found', 404, 'No route matches the path.', fixed('No route matches this path.')),
  methodNotAllowed: api(
    'method_not_allowed',
    405,
    'The path exists but not for this method.',
    fixed('The method is not allowed for this path.'),
  ),
  httpError: api(
    'http_error',
    400,
    'Another 4xx raised by the HTTP framework, with its status.',
    (status: number, message: string) => ({ status, message }),
  ),
  unauthorized: api(
    'unauthorized',
    401,
    'No valid Bearer key (the admin key, or a workspace key for /workspaces routes).',
    (message: string) => ({ message, headers: { 'WWW-Authenticate': 'Bearer' } }),
  ),
  tooManyAuthFailures: api(
    'too_many_auth_failures',
    429,
    'This source address presented too many wrong keys (`[auth] max_failures` per `failure_window_seconds`); retry after `Retry-After` seconds.',
    (retryAfterSeconds: number) => ({
      message: `Too many failed authentication attempts from this address. Retry in ${retryAfterSeconds} s.`,
      details: { retry_after_seconds: retryAfterSeconds },
      headers: { 'Retry-After': String(retryAfterSeconds) },
    }),
  ),
  malformedHttpRequest: api(
    'malformed_http_request',
    400,
    "Node's HTTP parser refused the request (bad method, raw bytes in the path or a header, broken chunked encoding); `details.reason` is the parser's code. The connection is closed.",
    (reason: string) => ({ message: 'The request is not valid HTTP.', details: { reason } }),
  ),
  headersTooLarge: api(
    'headers_too_large',
    431,
    'The request line and headers are larger than the server accepts (16 KiB). The connection is closed.',
    fixed('The request headers are too large.'),
  ),
  requestHeaderTimeout: api(
    'request_header_timeout',
    408,
    'The request headers (or body) did not arrive in time. The connection is closed.',
    fixed('The request did not arrive in time.'),
  ),
  originNotAllowed: api(
    'origin_not_allowed',
    403,
    'A browser action came from an origin that is neither this one nor a configured CORS origin.',
    (origin: string) => ({
      message: 'This action is only accepted from the same origin or a configured CORS origin.',
      details: { origin },
    }),
  ),
  requestTimeout: api(
    'request_timeout',
    503,
    'The request deadline (`[server] request_timeout_seconds`) passed.',
    // Upstream's text; the deadline is a Vigil addition in details.
    (seconds?: number) => ({
      message: 'The request timed out.',
      details: seconds === undefined ? {} : { request_timeout_seconds: seconds },
    }),
  ),
  clientClosedRequest: api(
    'client_closed_request',
    499,
    'The client went away; the work was cancelled (never sent, only logged).',
    fixed('The client closed the request.'),
  ),
  insufficientStorage: api(
    'insufficient_storage',
    507,
    "The data directory's disk is full: writes that add data are refused until space is freed (deletes still work; health says `degraded`).",
    (details: Details = {}) => ({
      message:
        'There is not enough free space in the data directory to store this. Delete data or free disk space, then retry.',
      details,
    }),
  ),
  internalError: api(
    'internal_error',
    500,
    'An unexpected failure; the log has the stack under the request id.',
    fixed(Messages.internal),
  ),
  serviceNotReady: api(
    'service_not_ready',
    503,
    'The models are still loading (or failed to load); retry shortly.',
    fixed(Messages.serviceNotReady),
  ),
  databaseNotVerified: api(
    'database_not_verified',
    503,
    'The database failed its integrity check (quick_check after an unclean stop): nothing but health and system is served until it is repaired or restored; `details.quick_check` says what SQLite found.',
    (quickCheck: string) => ({
      message: 'The database failed its integrity check: the service does not serve until it is repaired or restored.',
      details: { quick_check: quickCheck },
    }),
  ),
  shuttingDown: api('shutting_down', 503, 'The service is stopping.', fixed('The service is stopping.')),
  serverStopping: api('server_stopping', 503, 'The service is stopping; the action did nothing.', (what: string) => ({
    message: `The service is shutting down; ${what}`,
  })),

  // ---- images and inference ----
  invalidImage: api(
    'invalid_image',
    422,
    'The image is empty, of an unsupported format, cannot be decoded (`details` is `{}`, as upstream), is too thin (`[server] max_image_aspect_ratio`), a JPEG of more than 100 scans (`too_many_scans`) or too slow to decode (`image_decode_timeout_seconds`; these three give `details.reason`).',
    (
      kind: 'empty' | 'unsupported' | 'undecodable' | 'shape' | 'timeout' | 'too_many_scans',
      reason?:
        string | { width: number; height: number; maxAspectRatio: number } | { seconds: number } | { maxScans: number },
    ) => {
      if (kind === 'too_many_scans' && typeof reason === 'object' && 'maxScans' in reason) {
        return {
          message: `The JPEG has more than ${reason.maxScans} scans; it would take too long to decode.`,
          details: { reason: 'too_many_scans', max_jpeg_scans: reason.maxScans },
        };
      }
      if (kind === 'shape' && typeof reason === 'object' && 'maxAspectRatio' in reason) {
        return {
          message: `The image is ${reason.width}x${reason.height} pixels; its sides may differ at most ${reason.maxAspectRatio} times.`,
          details: {
            reason: 'aspect_ratio',
            max_image_aspect_ratio: reason.maxAspectRatio,
            width: reason.width,
            height: reason.height,
          },
        };
      }
      if (kind === 'timeout' && typeof reason === 'object' && 'seconds' in reason) {
        return {
          message: `The image could not be decoded within ${reason.seconds} s.`,
          details: { reason: 'decode_timeout', image_decode_timeout_seconds: reason.seconds },
        };
      }
      // Upstream's body is exactly {code, message, details: {}}: the decoder's reason is not sent.
      return {
        message:
          kind === 'empty'
            ? Messages.emptyImage
            : kind === 'unsupported'
              ? Messages.invalidImage
              : Messages.undecodableImage,
      };
    },
  ),
  imageTooLarge: api(
    'image_too_large',
    413,
    'An image is over `[server] max_image_bytes`, `max_image_pixels` or `max_image_side`.',
    (
      limit:
        | { maxBytes: number; bytes?: number }
        | { maxPixels: number; width: number; height: number }
        | { maxSide: number; width: number; height: number },
    ) =>
      'maxBytes' in limit
        ? // Upstream's texts for bytes and pixels; the limits are a Vigil addition in details.
          { message: 'The image exceeds the byte limit.', details: { max_image_bytes: limit.maxBytes } }
        : 'maxSide' in limit
          ? {
              message: `The image is ${limit.width}x${limit.height} pixels; sides of at most ${limit.maxSide} pixels are accepted.`,
              details: { max_image_side: limit.maxSide, width: limit.width, height: limit.height },
            }
          : {
              message: 'The image pixel limit was exceeded.',
              details: { max_image_pixels: limit.maxPixels, width: limit.width, height: limit.height },
            },
  ),
  faceNotFound: api(
    'face_not_found',
    422,
    'No usable face in the image (422; compare names `details.side`, `details.reason` tells of unusable landmarks or embedding), or no face sample with this id (404).',
    (what?: 'degenerate_landmarks' | 'invalid_embedding' | { faceId: string }) =>
      typeof what === 'object'
        ? { status: 404, message: `Face ${sq(what.faceId)} was not found.`, details: {} }
        : { message: Messages.faceNotFound, details: what ? { reason: what } : {} },
  ),
  embeddingUnavailable: api(
    'embedding_unavailable',
    422,
    'The selected face has no usable embedding (liveness observe mode).',
    (liveness: unknown) => ({ message: 'The face has no usable embedding.', details: { liveness } }),
  ),
  livenessFake: api(
    'liveness_fake',
    422,
    'Normal-mode liveness: the selected face is not live (`details.liveness`; compare sets `details.side`).',
    (liveness: unknown) => ({ message: 'The face did not pass the liveness check.', details: { liveness } }),
  ),
  livenessInputRejected: api(
    'liveness_input_rejected',
    422,
    'Normal-mode liveness: the face is unsuitable for a liveness verdict (size, position); the message says how to fix it.',
    (reason: string | null | undefined, liveness: unknown) => ({
      message: reason ?? 'Input does not meet liveness requirements. Adjust face position and retry.',
      details: { liveness },
    }),
  ),
  livenessUnavailable: api(
    'liveness_unavailable',
    503,
    'The liveness models could not run, so no verdict was given.',
    (cause: string) => ({
      message:
        'The liveness check could not run, so no verdict was given. Retry later; if it persists, check the liveness addon (vigil addons verify liveness).',
      details: { cause },
    }),
  ),
  requestDetectionOverrideNotSupported: api(
    'request_detection_override_not_supported',
    400,
    'A deprecated per-request detection field was sent; the detection profile decides.',
    (field: string, instead: string) => ({
      message: `${field} is no longer supported; ${instead}`,
      details: { field },
    }),
  ),
  inferenceUnavailable: api(
    'inference_unavailable',
    503,
    'No inference worker is running.',
    fixed('No inference worker is available.'),
  ),
  engineStopped: api(
    'engine_stopped',
    503,
    'The inference engine is shutting down.',
    fixed('The inference engine is shutting down.'),
  ),
  modelLoadFailed: api(
    'model_load_failed',
    500,
    'The model pack could not be loaded into onnxruntime.',
    (why: string) => ({ message: `Could not load the model pack: ${why}` }),
  ),
  executionProviderUnavailable: api(
    'execution_provider_unavailable',
    500,
    'A configured execution provider is not in this onnxruntime build (there is no silent fallback).',
    (missing: string[], available: string[], reasons: Record<string, string> = {}) => ({
      message: `Execution provider(s) ${missing.join(', ')} are not available here (available: ${available.join(', ')})${
        missing.some((m) => reasons[m])
          ? `: ${missing
              .filter((m) => reasons[m])
              .map((m) => `${m}: ${reasons[m]}`)
              .join('; ')}`
          : ''
      }. Vigil does not fall back silently: fix [inference].execution_providers.`,
      details: { missing, available, reasons },
    }),
  ),

  // ---- collections, persons, faces, search ----
  collectionNotFound: api('collection_not_found', 404, 'No collection with this id.', (id: string) => ({
    message: `Collection ${sq(id)} was not found.`,
    details: {},
  })),
  personNotFound: api('person_not_found', 404, 'No person with this id in the collection.', (id: string) => ({
    message: `Person ${sq(id)} was not found.`,
    details: {},
  })),
  // Upstream's text and empty details.
  collectionExists: api('collection_exists', 409, 'A collection with this id exists.', () => ({
    message: 'The collection already exists.',
  })),
  collectionModelMismatch: api(
    'collection_model_mismatch',
    409,
    'The collection is pinned to another model than the active one; embeddings are never converted.',
    (id: string, collectionModel: Details, activeModel: Details) => ({
      message: `Collection ${q(id)} was built with a different model than the active one; embeddings are never converted.`,
      details: { collection_id: id, collection_model: collectionModel, active_model: activeModel },
    }),
  ),
  collectionNotEmpty: api(
    'collection_not_empty',
    409,
    'Deleting a collection with persons needs `force=true`.',
    (id: string, personCount: number, faceCount: number) => ({
      message: `Collection ${q(id)} is not empty; pass force=true to delete it with its persons and faces.`,
      details: { collection_id: id, person_count: personCount, face_count: faceCount },
    }),
  ),
  collectionInUse: api(
    'collection_in_use',
    409,
    'A monitor uses the collection; delete or move the monitor first.',
    (id: string) => ({
      message: `Collection ${q(id)} is used by a monitor; delete or move the monitor first.`,
      details: { collection_id: id },
    }),
  ),
  collectionCapacityExceeded: api(
    'collection_capacity_exceeded',
    409,
    'The write would take the collection past `capacity_rows` (or shrink it below its faces).',
    (capacityRows: number, requestedRows: number, shrinking = false) => ({
      // Upstream's text for both cases (the details tell them apart).
      message: shrinking
        ? 'The Collection has reached its configured search capacity.'
        : 'The Collection has reached its configured search capacity.',
      details: { capacity_rows: capacityRows, requested_rows: requestedRows },
    }),
  ),
  searchCapacityTooLarge: api(
    'search_capacity_too_large',
    400,
    '`capacity_rows` is over `[collections] max_capacity_rows`.',
    // Upstream's text and details.
    (max: number) => ({
      message: "capacity_rows exceeds this deployment's configured maximum.",
      details: { max_capacity_rows: max },
    }),
  ),
  invalidDetectionProfile: api(
    'invalid_detection_profile',
    400,
    'The detection profile is not usable (input sizes).',
    (problem: string, inputSizes: unknown) => ({ message: problem, details: { input_sizes: inputSizes } }),
  ),
  searchIndexUnavailable: api(
    'search_index_unavailable',
    503,
    "The collection's search index could not be built or updated (`details.write_committed` tells whether a write was saved).",
    (collectionId: string, reason: string | { revision: number }) =>
      typeof reason === 'string'
        ? {
            message: 'The search index of this collection could not be built.',
            details: { collection_id: collectionId, reason },
          }
        : {
            message: 'The write was saved but the search index could not be updated; it will be rebuilt on next use.',
            details: { write_committed: true, collection_id: collectionId, revision: reason.revision },
          },
  ),
  storeUnavailable: api(
    'store_unavailable',
    503,
    "Fleet mode: the shared PostgreSQL database cannot be reached, so nothing was written (search and monitors keep working from this box's replica; workspace, key and scrape-run calls need the database); retry when health is ok again.",
    (reason: string) => ({
      message:
        "The shared database is unreachable: nothing was written. Search keeps working from this box's copy; workspace and scrape calls need the database. Retry shortly.",
      details: { write_committed: false, reason },
    }),
  ),
  personExists: api(
    'person_exists',
    409,
    'A person with this id (or external_id) exists in the collection.',
    (by: { id: string } | { externalId: string }) =>
      'id' in by
        ? { message: `Person ${q(by.id)} already exists in this collection.`, details: { person_id: by.id } }
        : {
            message: `A person with external_id ${q(by.externalId)} already exists in this collection.`,
            details: { external_id: by.externalId },
          },
  ),
  externalIdExists: api(
    'external_id_exists',
    409,
    'Another person of the collection has this external_id.',
    (externalId: string) => ({
      message: `external_id ${q(externalId)} is already used in this collection.`,
      details: { external_id: externalId },
    }),
  ),
  invalidPersonId: api(
    'invalid_person_id',
    400,
    'A person id must match `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.',
    (id: string) => ({ message: 'id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$.', details: { person_id: id } }),
  ),
  invalidMetadata: api(
    'invalid_metadata',
    400,
    '`metadata` is not a JSON object, or is over 64 KiB as JSON or nested more than 16 levels deep (`details.reason` `too_large` or `too_deep`; on every route that takes metadata).',
    (
      problem?:
        | { reason: 'too_deep'; max_metadata_depth: number }
        | { reason: 'too_large'; max_metadata_bytes: number; bytes: number },
    ) =>
      !problem
        ? { message: 'metadata must be a JSON object (sent as a string field).' }
        : problem.reason === 'too_deep'
          ? { message: `metadata is nested more than ${problem.max_metadata_depth} levels deep.`, details: problem }
          : {
              message: `metadata is ${problem.bytes} bytes as JSON; at most ${problem.max_metadata_bytes} are accepted.`,
              details: problem,
            },
  ),
  tooManyImages: api(
    'too_many_images',
    400,
    'More images than `[server] max_registration_images` in one registration.',
    (max: number, count?: number) => ({
      message: `At most ${max} images per request.`,
      details: count === undefined ? { max_images: max } : { max_images: max, image_count: count },
    }),
  ),
  personFaceLimitExceeded: api(
    'person_face_limit_exceeded',
    409,
    "The person would hold more than the collection's `max_faces_per_person`.",
    (max: number, requested: number) => ({
      message: `A person may hold at most ${max} faces in this collection.`,
      details: { max_faces: max, requested_faces: requested },
    }),
  ),
  registrationFailed: api(
    'registration_failed',
    422,
    'Creating a person: no image was accepted (`details.rejected_images`).',
    // Upstream's two texts: nothing could even be loaded, or nothing loaded held one registrable face.
    (rejected: { reason: string }[]) => ({
      message: rejected.every((r) => r.reason === 'invalid_image' || r.reason === 'image_too_large')
        ? 'None of the uploaded images were valid.'
        : 'None of the uploaded images contained one registrable face.',
      details: { rejected_images: rejected },
    }),
  ),
  faceImageNotFound: api(
    'face_image_not_found',
    404,
    'The face has no stored crop (its collection did not save crops).',
    (faceId: string) => ({
      message: `Face ${sq(faceId)} has no stored crop (the collection did not save crops when it was registered).`,
      details: { face_id: faceId },
    }),
  ),
  unexpectedExternalEmbedding: api(
    'unexpected_external_embedding',
    400,
    'External embeddings sent without `embedding_mode=external_trusted`.',
    fixed('external_embeddings and embedding_contract_id are only accepted with embedding_mode=external_trusted.'),
  ),
  missingExternalEmbeddings: api(
    'missing_external_embeddings',
    400,
    '`external_trusted` without `external_embeddings`.',
    fixed('embedding_mode=external_trusted needs external_embeddings (one vector per image).'),
  ),
  missingEmbeddingContractId: api(
    'missing_embedding_contract_id',
    400,
    "`external_trusted` without the collection's `embedding_contract_id`.",
    fixed("embedding_mode=external_trusted needs the collection's embedding_contract_id."),
  ),
  embeddingContractMismatch: api(
    'embedding_contract_mismatch',
    409,
    "The embedding contract id is not the collection's.",
    (expected: string, provided: string) => ({
      message: 'The embedding contract does not match this collection; copy embedding_contract_id from the collection.',
      details: { expected_embedding_contract_id: expected, provided_embedding_contract_id: provided },
    }),
  ),
  importContractConflict: api(
    'import_contract_conflict',
    400,
    "A gallery import's `embedding_contract_id` query parameter differs from the one in the file's export header; nothing was imported.",
    (query: string, header: string) => ({
      message: `embedding_contract_id ${q(query)} in the query differs from ${q(header)} in the file's export header: drop the query parameter (the header's is used) or import the file into a collection of its contract.`,
      details: { query_embedding_contract_id: query, header_embedding_contract_id: header },
    }),
  ),
  invalidImportLine: api(
    'invalid_import_line',
    400,
    'A line of a gallery import is not a valid person with trusted embeddings (`details.line`, `details.problem`); its batch changed nothing.',
    (line: number, problem: string) => ({ message: `Line ${line}: ${problem}`, details: { line, problem } }),
  ),
  importPersonConflict: api(
    'import_person_conflict',
    409,
    'A gallery import with `on_conflict=skip` found a person of the file in the collection with other faces (`details.reason` `faces_differ`), or a new person whose external_id another person has (`external_id_taken`): it is left as it is and reported on a `conflict` line; the import goes on.',
    (
      personId: string,
      conflict:
        | { reason: 'faces_differ'; stored_faces: number; file_faces: number }
        | { reason: 'external_id_taken'; external_id: string },
    ) => ({
      message:
        conflict.reason === 'faces_differ'
          ? `Person ${q(personId)} exists with other faces than the file's (${conflict.stored_faces} stored, ${conflict.file_faces} in the file); it was left as it is.`
          : `External id ${q(conflict.external_id)} of person ${q(personId)} belongs to another person of the collection; ${q(personId)} was not imported.`,
      details: { person_id: personId, ...conflict },
    }),
  ),
  invalidExternalEmbeddings: api(
    'invalid_external_embeddings',
    400,
    '`external_embeddings` is not a JSON array of vectors.',
    fixed('external_embeddings must be a JSON array of vectors.'),
  ),
  externalEmbeddingCountMismatch: api(
    'external_embedding_count_mismatch',
    400,
    'Not one external vector per image.',
    (images: number, embeddings: number) => ({
      message: `Got ${embeddings} vectors for ${images} images.`,
      details: { image_count: images, embedding_count: embeddings },
    }),
  ),

  // ---- monitors ----
  // Upstream's not-found: its text and empty details.
  monitorNotFound: api('monitor_not_found', 404, 'No monitor with this id.', (id: string) => ({
    message: `Monitor ${sq(id)} was not found.`,
  })),
  monitorExists: api('monitor_exists', 409, 'A monitor with this id exists.', (id: string) => ({
    message: `Monitor ${q(id)} already exists.`,
    details: { monitor_id: id },
  })),
  monitorLimitExceeded: api(
    'monitor_limit_exceeded',
    429,
    'Enabling it would run more monitors than `[monitors] max_streams`.',
    (max: number) => ({
      message: `At most ${max} monitors can be enabled at once; disable or delete one first.`,
      details: { max_monitors: max },
    }),
  ),
  monitorTestBusy: api(
    'monitor_test_busy',
    429,
    'As many camera connection tests as a box runs at once are running; retry when one has finished.',
    (max: number) => ({
      message: `${max} connection tests are running; retry in a few seconds.`,
      details: { max_running: max },
      headers: { 'Retry-After': '5' },
    }),
  ),
  monitorStartFailed: api(
    'monitor_start_failed',
    500,
    'The GStreamer pipeline could not be built (check `[monitors] pipeline`).',
    (id: string, why: string) => ({
      message: `The monitor could not start: ${why}. Check [monitors].pipeline and the GStreamer installation.`,
      details: { monitor_id: id },
    }),
  ),
  previewDisabled: api('preview_disabled', 409, "The monitor's preview is off.", (id: string) => ({
    message: `Preview is disabled for monitor ${q(id)}; PATCH preview_enabled=true first.`,
    details: { monitor_id: id },
  })),
  monitorOtherBox: api(
    'monitor_other_box',
    409,
    'The monitor belongs to another box (`details.box_id`): only that box runs and changes it; this box may only delete it.',
    (id: string, owner: string, self: string) => ({
      message: `Monitor ${q(id)} belongs to box ${q(owner)}, not to this box (${q(self)}): change it there, or set [server] box_id = ${q(owner)} if this is that box renamed.`,
      details: { monitor_id: id, box_id: owner, this_box_id: self },
    }),
  ),
  streamUnavailable: api(
    'stream_unavailable',
    503,
    'The monitor has no connected stream right now.',
    (id: string, status: string) => ({
      message: `Monitor ${q(id)} has no connected stream right now.`,
      details: { monitor_id: id, status },
    }),
  ),

  // ---- event history and webhooks ----
  eventNotFound: api(
    'event_not_found',
    404,
    'No event with this id in the history (deleted, or removed by retention).',
    (id: string) => ({ message: `Event ${sq(id)} was not found.`, details: { event_id: id } }),
  ),
  eventSnapshotNotFound: api(
    'event_snapshot_not_found',
    404,
    'The event has no snapshot picture (`details.snapshot` says why: none, pending, failed, expired).',
    (id: string, snapshot: string) => ({
      message: `Event ${sq(id)} has no snapshot (${snapshot}).`,
      details: { event_id: id, snapshot },
    }),
  ),
  clipNotFound: api(
    'clip_not_found',
    404,
    'The event has no playable clip (`details.clip` says why: none, recording, failed, expired).',
    (id: string, clip: string) => ({
      message: `Event ${sq(id)} has no clip (${clip}).`,
      details: { event_id: id, clip },
    }),
  ),
  rangeNotSatisfiable: api(
    'range_not_satisfiable',
    416,
    'The Range header asks for bytes the file does not have, or is not a single bytes range (`details.size`).',
    (range: string, size: number) => ({
      message: `Range ${JSON.stringify(range.slice(0, 100))} cannot be served from ${size} bytes.`,
      details: { range: range.slice(0, 100), size },
    }),
  ),
  eventPictureOnOtherBox: api(
    'event_picture_on_other_box',
    409,
    'Fleet mode: the event was recorded by another box (`details.box_id`); its pictures are kept only there, so ask that box for them.',
    (id: string, owner: string) => ({
      message: `Event ${q(id)} was recorded by box ${q(owner)}; its pictures are on that box only.`,
      details: { event_id: id, box_id: owner },
    }),
  ),
  eventNotEnrollable: api(
    'event_not_enrollable',
    409,
    'The event has no face crop to enrol from (not an identity event, or its snapshot is gone).',
    (id: string, why: string) => ({
      message: `Event ${q(id)} cannot be enrolled from: ${why}.`,
      details: { event_id: id },
    }),
  ),

  // ---- unknown visitors (issue 42) ----
  unknownNotFound: api(
    'unknown_not_found',
    404,
    'No unknown visitor with this id (deleted, or removed with its last event by retention).',
    (id: string) => ({ message: `Unknown visitor ${sq(id)} was not found.`, details: { unknown_id: id } }),
  ),
  unknownCropNotFound: api(
    'unknown_crop_not_found',
    404,
    'The unknown visitor has no sample crop with this id (replaced by a better one, or deleted).',
    (id: string, cropId: string) => ({
      message: `Unknown visitor ${sq(id)} has no crop ${sq(cropId)}.`,
      details: { unknown_id: id, crop_id: cropId },
    }),
  ),
  unknownNotEnrollable: api(
    'unknown_not_enrollable',
    409,
    'The unknown visitor has no sample crop to enrol from (its crops are written when its visit ends).',
    (id: string, why: string) => ({
      message: `Unknown visitor ${q(id)} cannot be enrolled: ${why}.`,
      details: { unknown_id: id },
    }),
  ),
  unknownModelMismatch: api(
    'unknown_model_mismatch',
    409,
    'The unknown visitors were grouped with different recognition models; their faces cannot be compared, so they cannot be merged.',
    (ids: string[], models: string[]) => ({
      message: `Unknown visitors ${ids.map(q).join(', ')} come from different models (${models.join(', ')}).`,
      details: { unknown_ids: ids, models },
    }),
  ),
  webhookNotFound: api('webhook_not_found', 404, 'No webhook endpoint with this id.', (id: string) => ({
    message: `Webhook ${sq(id)} was not found.`,
    details: { webhook_id: id },
  })),
  webhookLimitReached: api(
    'webhook_limit_reached',
    409,
    'The workspace already has as many webhook endpoints as [webhooks] max_endpoints_per_workspace allows; delete one first.',
    (limit: number) => ({
      message: `This workspace already has ${limit} webhook endpoints (the most allowed); delete one before creating another.`,
      details: { limit },
    }),
  ),

  // ---- models and the liveness addon ----
  modelPackUnknown: api(
    'model_pack_unknown',
    404,
    'The catalog has no such model pack.',
    (packId: string, known: string[]) => ({
      message: `unknown model pack "${packId}" (known packs: ${known.join(', ')})`,
      details: { pack: packId, known_packs: known },
    }),
  ),
  modelNotInstalled: api(
    'model_not_installed',
    503,
    'The configured model pack is not installed (the message has the install command); 404 from the CLI when no pack is installed at all.',
    (pack: string | null, dir: string, command?: string) =>
      pack === null
        ? { status: 404, message: `no model packs are installed in ${dir}`, details: { dir } }
        : {
            message: `model pack "${pack}" is not installed in ${dir}; install it with: ${command} (leave out --from <mirror> to download from the catalog sources)`,
            details: { pack, dir, install_command: command },
          },
  ),
  modelInvalid: api(
    'model_invalid',
    503,
    'An installed model file fails its pinned SHA-256 (reinstall).',
    (pack: string, dir: string, problems: unknown[], description: string, command: string) => ({
      message: `model pack "${pack}" in ${dir} failed verification: ${description}; reinstall it with: ${command}`,
      details: { pack, dir, problems, install_command: command },
    }),
  ),
  modelCatalogInvalid: api(
    'model_catalog_invalid',
    500,
    'The model catalog (models/manifest.json or `[server] model_catalog`) is unreadable or inconsistent.',
    withReason,
  ),
  modelSourceUnavailable: api(
    'model_source_unavailable',
    503,
    'No mirror or catalog source can provide a model file.',
    (message: string, details: Details, status?: number) => ({ message, details, ...(status ? { status } : {}) }),
  ),
  modelDownloadFailed: api(
    'model_download_failed',
    502,
    'A model file could not be downloaded from any source.',
    (message: string, details: Details) => ({ message, details }),
  ),
  modelChecksumMismatch: api(
    'model_checksum_mismatch',
    502,
    'Every source served a model file whose SHA-256 is not the pinned one.',
    (message: string, details: Details) => ({ message, details }),
  ),
  licenseNotAccepted: api(
    'license_not_accepted',
    403,
    "The model pack's licence must be accepted (`--accept-license`).",
    (pack: string, licenses: string[]) => ({
      message: `the licence terms of model pack "${pack}" were not accepted; read them above and re-run with --accept-license`,
      details: { pack, licenses },
    }),
  ),
  addonModelMissing: api(
    'addon_model_missing',
    500,
    'Liveness is enabled but its model files are missing (install them).',
    withOptions,
  ),
  addonModelInvalid: api(
    'addon_model_invalid',
    500,
    'A liveness model file fails its pinned SHA-256, or could not be loaded.',
    withOptions,
  ),
  addonJobInProgress: api(
    'addon_job_in_progress',
    409,
    'Another job (or process) is preparing the liveness addon.',
    (message: string, pid?: number) => ({ message, details: pid === undefined ? {} : { pid } }),
  ),
  addonDownloadFailed: api(
    'addon_download_failed',
    502,
    'The liveness model files could not be downloaded and verified.',
    withReason,
  ),
  addonConfigSaveFailed: api(
    'addon_config_save_failed',
    500,
    'Enabling liveness could not be saved in the config file.',
    withOptions,
  ),
  addonConfigInvalid: api(
    'addon_config_invalid',
    500,
    'The config file is invalid, or would be after the edit.',
    withOptions,
  ),
  addonManagementUnavailable: api(
    'addon_management_unavailable',
    409,
    'Liveness cannot be enabled from the API here (`details.unavailable_code` says why).',
    (reason: string | null, details: Details) => ({ message: reason ?? 'Liveness cannot be enabled here.', details }),
  ),
  addonDirectoryNotWritable: api(
    'addon_directory_not_writable',
    409,
    'The service cannot write the liveness models to its models directory.',
    withReason,
  ),
  configFileMissing: api('config_file_missing', 409, 'There is no config file to save a setting in.', withReason),
  configFileNotRegular: api(
    'config_file_not_regular',
    409,
    'The config file is a symlink or not a regular file; edit it by hand.',
    withReason,
  ),
  configFileMount: api(
    'config_file_mount',
    409,
    'The config file is a single-file mount and cannot be replaced atomically.',
    withReason,
  ),
  configNotWritable: api(
    'config_not_writable',
    409,
    'The config file or its directory is not writable by the service.',
    withReason,
  ),
  configFileInvalid: api(
    'config_file_invalid',
    409,
    'The config file on disk does not validate (edited by hand?): nothing is changed until it is fixed; the message names the key.',
    withReason,
  ),
  settingUnknown: api(
    'setting_unknown',
    400,
    'No configuration key has that dotted name (`details.suggestion` is the nearest one).',
    (key: string, suggestion: string | null, hint: string | null) => ({
      message: `There is no setting ${q(key)}${suggestion ? ` (did you mean ${q(suggestion)}?)` : hint ? ` (${hint})` : ''}.`,
      details: { key, suggestion },
    }),
  ),
  settingNotEditable: api(
    'setting_not_editable',
    400,
    'The key cannot be changed through the settings API or `vigil config set` (a credential, or where the service listens and keeps its data); `details.reason` says where to change it.',
    (key: string, reason: string) => ({
      message: `${key} cannot be changed here: ${reason}.`,
      details: { key, reason },
    }),
  ),
  settingsInvalid: api(
    'settings_invalid',
    400,
    'A new value does not validate against the configuration schema (the one the service starts with); `details.key` names the key, `details.issues` every problem. Nothing was written.',
    (key: string, message: string, issues: { key: string; message: string }[] = [{ key, message }]) => ({
      message: `${key}: ${message}`,
      details: { key, issues },
    }),
  ),
  settingsConflict: api(
    'settings_conflict',
    409,
    'The config file changed while the settings were being saved (another edit at the same time); nothing was written. Retry.',
    fixed('The config file changed while the settings were being saved; nothing was written. Retry.'),
  ),
  invalidAddonRequest: api(
    'invalid_addon_request',
    400,
    'The addon action takes exactly `{}`.',
    fixed('The body must be exactly {}.'),
  ),

  // ---- workspaces and scrapers ----
  workspaceNotFound: api(
    'workspace_not_found',
    404,
    'No such workspace, or the key is not one of its keys.',
    (id: string) => ({ message: `Workspace ${sq(id)} does not exist or this key does not belong to it.` }),
  ),
  workspaceExists: api('workspace_exists', 409, 'A workspace with this id exists.', (id: string) => ({
    message: `Workspace "${id}" already exists.`,
  })),
  keyNotFound: api('key_not_found', 404, 'No workspace key with this id.', (keyId: string) => ({
    message: `Workspace key ${sq(keyId)} was not found.`,
  })),
  keyAlreadyRevoked: api('key_already_revoked', 409, 'The workspace key was already revoked.', (keyId: string) => ({
    message: `Key "${keyId}" was already revoked.`,
  })),
  quotaExceeded: api(
    'quota_exceeded',
    429,
    'The workspace has no item units left this month.',
    (message: string, details: Details) => ({ message, details }),
  ),
  scrapeQueueFull: api(
    'scrape_queue_full',
    503,
    'Too many runs are queued or running (`[scrapers] max_queued_runs`).',
    (active: number, max: number) => ({
      message: `The scrape queue is full (${active} runs queued or running). Retry later.`,
      details: { max_queued_runs: max },
      headers: { 'Retry-After': '30' },
    }),
  ),
  runNotFound: api('run_not_found', 404, 'No such run in this workspace.', (id: string, inWorkspace = true) => ({
    message: inWorkspace ? `Run ${sq(id)} was not found in this workspace.` : `Run ${sq(id)} was not found.`,
  })),
  runInterrupted: api(
    'run_interrupted',
    500,
    'A run was interrupted by several service restarts and given up.',
    (attempts: number) => ({
      message: `The run was interrupted by ${attempts} service restarts and was given up.`,
      details: { attempts },
    }),
  ),
  scraperDisabled: api(
    'scraper_disabled',
    503,
    'The scraper kind is switched off on this deployment.',
    (kind: 'forum' | 'places') => ({
      message: `The ${kind} scraper is disabled on this deployment ([scrapers.${kind}] enabled = false).`,
    }),
  ),
  scraperNotConfigured: api(
    'scraper_not_configured',
    503,
    'The forum scraper has no Reddit credentials.',
    fixed(
      'The forum scraper has no Reddit credentials: set VIGIL_REDDIT_CLIENT_ID and VIGIL_REDDIT_CLIENT_SECRET (or [scrapers.forum] client_id/client_secret).',
    ),
  ),
  workerCrashed: api(
    'worker_crashed',
    500,
    'The scrape worker process died during the run.',
    (exitCode: number | null, signal: string | null) => ({
      message: 'The scrape worker process exited during the run.',
      details: { exit_code: exitCode, signal },
    }),
  ),
  unsupportedSort: api(
    'unsupported_sort',
    400,
    'The sort is not available for this kind of forum source.',
    (label: string, message: string) => ({
      message: `Request validation failed: ${label}: ${message}`,
      details: { field: 'sort', source: label },
    }),
  ),
  unsupportedUrl: api(
    'unsupported_url',
    400,
    'A source URL is not one the scraper understands.',
    (url: string, why: string) => ({
      message: `Request validation failed: urls: ${url}: ${why}`,
      details: { field: 'urls', url },
    }),
  ),
  notFound: api(
    'not_found',
    404,
    'A scrape source: the upstream has nothing at this address.',
    (message: string, details: Details = {}) => ({ message, details }),
  ),
  communityBanned: api('community_banned', 404, 'A scrape source: the community is banned.', (path: string) => ({
    message: 'The community is banned.',
    details: { path },
  })),
  communityPrivate: api('community_private', 403, 'A scrape source: the community is private.', (path: string) => ({
    message: 'The community is private.',
    details: { path },
  })),
  communityQuarantined: api(
    'community_quarantined',
    403,
    'A scrape source: the community is quarantined.',
    (path: string) => ({ message: 'The community is quarantined (app-only access cannot opt in).', details: { path } }),
  ),
  userSuspended: api('user_suspended', 403, 'A scrape source: the account is suspended.', (name: string) => ({
    message: `The account u/${name} is suspended.`,
  })),
  upstreamForbidden: api(
    'upstream_forbidden',
    403,
    'The upstream refused access to a source.',
    (reason: string | undefined, path: string) => ({
      message: `Reddit refused access (${reason ?? 'forbidden'}).`,
      details: { path, reason },
    }),
  ),
  upstreamAuthFailed: api(
    'upstream_auth_failed',
    502,
    'The upstream refused the app credentials or token.',
    (message: string, details: Details = {}) => ({ message, details }),
  ),
  upstreamRateLimited: api(
    'upstream_rate_limited',
    429,
    'The upstream rate-limited this credential.',
    (waitSeconds: number, path: string) => ({
      message: `Reddit rate-limited this credential (retry after ${waitSeconds} s).`,
      details: { retry_after_seconds: waitSeconds, path },
    }),
  ),
  upstreamBlocked: api(
    'upstream_blocked',
    502,
    'The upstream blocked this client.',
    (message: string, details: Details) => ({ message, details }),
  ),
  upstreamError: api(
    'upstream_error',
    502,
    'The upstream answered with an error or a document we cannot read.',
    (message: string, details: Details = {}) => ({ message, details }),
  ),
  upstreamUnavailable: api(
    'upstream_unavailable',
    502,
    'The upstream kept answering 5xx/429 after the retries.',
    (message: string, details: Details) => ({ message, details }),
  ),
  upstreamUnreachable: api(
    'upstream_unreachable',
    502,
    'The upstream could not be reached (DNS, refused, reset).',
    (message: string, details: Details = {}) => ({ message, details }),
  ),
  upstreamTimeout: api(
    'upstream_timeout',
    504,
    'The upstream did not answer in time after the retries.',
    (message: string, details: Details) => ({ message, details }),
  ),
  consentWall: api(
    'consent_wall',
    502,
    'Google answered with its cookie-consent wall; later requests fail fast for `blocked_cooldown_seconds`.',
    (message: string, details: Details) => ({ message, details }),
  ),
  unusualTraffic: api(
    'unusual_traffic',
    502,
    'Google answered with its "unusual traffic" page; later requests fail fast for `blocked_cooldown_seconds`.',
    (message: string, details: Details) => ({ message, details }),
  ),
  unexpectedDocument: api(
    'unexpected_document',
    502,
    'The upstream document is not in a format we understand (it may have changed).',
    (what: string, details: Details = {}) => ({
      message: `Google answered with ${what}; the format may have changed.`,
      details,
    }),
  ),
  unexpectedRedirect: api(
    'unexpected_redirect',
    502,
    'The upstream redirected to an unexpected page.',
    (what: string, status: number) => ({
      message: `Google redirected the ${what} request (HTTP ${status}) to an unexpected page.`,
      details: { status },
    }),
  ),
  silentTruncation: api(
    'silent_truncation',
    502,
    'Google served the same search page again; the result is cut there.',
    (page: number, seen: number) => ({
      message: `Google served page ${page} of the search again instead of the next one (results stopped at ${seen}); the result is cut there.`,
      details: { page, places_seen: seen },
    }),
  ),
  scrapeFailed: api(
    'scrape_failed',
    502,
    'The scraper failed unexpectedly inside the worker (a bug; the log has the stack).',
    (why: string) => ({ message: `The scraper failed: ${why}` }),
  ),
  runNotActive: api(
    'run_not_active',
    409,
    'The run already finished (succeeded, partial or failed); only queued or running runs can be cancelled.',
    (id: string, status: string) => ({
      message: `Run "${id}" already finished (${status}); there is nothing to cancel.`,
      details: { status },
    }),
  ),
  runItemsPurged: api(
    'run_items_purged',
    410,
    "The run's items were deleted after `[scrapers] result_retention_hours`; its counts and billing remain.",
    (id: string, purgedAt: string) => ({
      message: `The items of run "${id}" were deleted at ${purgedAt} (retention period); counts and billing remain.`,
      details: { purged_at: purgedAt },
    }),
  ),
  daemonUnreachable: api(
    'daemon_unreachable',
    503,
    'MCP over stdio or a CLI command that works through the daemon: its REST API could not be reached.',
    (url: string, why: string) => ({ message: `The Vigil daemon at ${url} could not be reached: ${why}.` }),
  ),

  // ---- scrape problems (in a run's sources[].problems; the run is partial, the rest is delivered) ----
  commentsUnavailable: scrapeProblem(
    'comments_unavailable',
    "A run problem: a post's comments could not be read; the post is delivered without them.",
    (postId: string, cause: { code: string; message: string }) => ({
      message: `The comments of ${postId} could not be read (${cause.message}); the post is delivered without them.`,
      details: { item_id: postId, cause: cause.code },
    }),
  ),
  commentsIncomplete: scrapeProblem(
    'comments_incomplete',
    'A run problem: some comment branches of a post could not be expanded; the comments read so far are delivered.',
    (postId: string, branches: number, cause: { code: string; message: string }) => ({
      message: `${branches} comment branch(es) of ${postId} could not be expanded (${cause.message}); the comments read before are delivered.`,
      details: { item_id: postId, branches, cause: cause.code },
    }),
  ),
  communityInfoUnavailable: scrapeProblem(
    'community_info_unavailable',
    "A run problem: a community's about page could not be read; its listing was still scraped, without the community item.",
    (name: string, cause: { code: string; message: string }) => ({
      message: `r/${name}/about could not be read (${cause.message}); the listing is scraped without the community item.`,
      details: { community: name, cause: cause.code },
    }),
  ),
  detailsUnavailable: scrapeProblem(
    'details_unavailable',
    "A run problem: a place's details (include_details) could not be read; the search data is delivered without them.",
    (itemId: string, cause: { code: string; message: string }) => ({
      message: `The details of ${itemId} could not be read (${cause.message}); the search data is delivered without them.`,
      details: { item_id: itemId, cause: cause.code },
    }),
  ),
  invalidItem: scrapeProblem(
    'invalid_item',
    'A run problem: an upstream record did not validate against the item schema (e.g. no id); it was dropped and not billed.',
    (itemId: string | null, issues: string[]) => ({
      message: `An upstream record${itemId ? ` (${itemId})` : ''} is not a valid item and was dropped: ${issues.slice(0, 3).join('; ')}.`,
      details: { item_id: itemId, issues },
    }),
  ),

  // ---- monitor conditions (in state.last_error and monitor_error events) ----
  rtspSourceUnavailable: monitorCondition(
    'rtsp_source_unavailable',
    'The RTSP source cannot be read; `cause` says why (connection_refused, host_not_found, not_found, unauthorized, not_rtsp, no_video, timeout); the monitor reconnects by itself.',
    (reason: string, retryMs: number) => ({
      message: `The RTSP source is unavailable: ${reason}. Reconnecting in ${retryMs / 1000} s.`,
    }),
  ),
  monitorInferenceFailed: monitorCondition(
    'monitor_inference_failed',
    "Inference on the monitor's frames fails; the monitor is degraded until it works again.",
    (message: string) => ({ message: `Inference failed: ${message}` }),
  ),
  monitorRestoreFailed: monitorCondition(
    'monitor_restore_failed',
    'An enabled monitor could not be restored at start-up (capacity, collection, pipeline); its status is `error`.',
    fixed('The Monitor could not be restored at startup.'),
  ),

  // ---- operating the appliance (metrics, kiosk tokens, backups, gallery archives) ----
  metricsLoopbackOnly: api(
    'metrics_loopback_only',
    403,
    '`/metrics` is served to this host only (`[metrics] auth = "loopback"`).',
    fixed('/metrics is served to this host only ([metrics] auth = "loopback").'),
  ),
  kioskTokenNotFound: api('kiosk_token_not_found', 404, 'No kiosk token with this id.', (id: string) => ({
    message: `Kiosk token ${sq(id)} was not found.`,
    details: { token_id: id },
  })),
  kioskTokenRevoked: api('kiosk_token_revoked', 409, 'The kiosk token was already revoked.', (id: string) => ({
    message: `Kiosk token "${id}" was already revoked.`,
    details: { token_id: id },
  })),

  // ---- user accounts, browser sessions, the audit log ----
  forbiddenRole: api(
    'forbidden_role',
    403,
    "The signed-in user's role may not do this; `details.required_role` is the role the operation needs, `details.role` the user's.",
    (required: string, role: string) => ({
      message: `This needs the ${required} role; you are signed in as ${role}.`,
      details: { required_role: required, role },
    }),
  ),
  csrfFailed: api(
    'csrf_failed',
    403,
    "A request that changes something, authenticated by the session cookie, lacked the session's `X-CSRF-Token` header or came from another site; `details.reason` (missing_token, wrong_token, cross_site). Bearer requests are never checked.",
    (reason: 'missing_token' | 'wrong_token' | 'cross_site') => ({
      message:
        reason === 'cross_site'
          ? 'This request came from another site; signed-in changes are accepted only from this one.'
          : 'The X-CSRF-Token header of this session is required for requests that change something.',
      details: { reason },
    }),
  ),
  invalidCredentials: api(
    'invalid_credentials',
    401,
    'Sign-in refused: the username or the password is wrong (the answer does not say which). Counts against the address like a wrong key.',
    fixed('The username or password is wrong.'),
  ),
  setupCodeInvalid: api(
    'setup_code_invalid',
    401,
    'The first-admin set-up code is wrong (it is printed at start while no user exists). Counts against the address like a wrong key.',
    fixed('The set-up code is not valid. Use the code the daemon printed at its last start.'),
  ),
  setupNotAvailable: api(
    'setup_not_available',
    409,
    'First-admin set-up is over: a user exists (sign in), or authentication is off.',
    fixed('Set-up is not available: a user exists already. Sign in instead.'),
  ),
  invalidPassword: api(
    'invalid_password',
    400,
    'The new password breaks a rule; `details.reason` (too_short: under 10 characters, too_long: over 256 bytes, control_characters, same_as_username).',
    (reason: string, text: string) => ({
      message: `Request validation failed: ${text}.`,
      details: { field: 'password', reason },
    }),
  ),
  userNotFound: api('user_not_found', 404, 'No user with this id.', (id: string) => ({
    message: `User ${sq(id)} was not found.`,
    details: { user_id: id },
  })),
  userExists: api(
    'user_exists',
    409,
    'A user with this username exists (usernames are case-insensitive).',
    (name: string) => ({
      message: `A user named ${q(name)} already exists.`,
      details: { username: name },
    }),
  ),
  lastAdmin: api(
    'last_admin',
    409,
    'The change would leave no admin user: make another user admin first.',
    (username: string) => ({
      message: `${username} is the last admin: make another user admin first.`,
      details: { username },
    }),
  ),
  sessionNotFound: api(
    'session_not_found',
    404,
    'No active session with this id (or not one of yours).',
    (id: string) => ({
      message: `Session ${sq(id)} was not found.`,
      details: { session_id: id },
    }),
  ),
  notSignedIn: api(
    'not_signed_in',
    400,
    'The operation acts on the session of the request (sign out, change own password), and this request was not authenticated by a session cookie.',
    fixed('This request is not signed in with a session (it used the API key).'),
  ),

  // ---- operator errors: configuration, command line, files (never HTTP) ----
  configInvalid: operator(
    'config_invalid',
    'The configuration (file or environment) is invalid; the message names the key.',
    (message: string, key?: string) => ({ message, details: key ? { key } : {} }),
  ),
  configUnreadable: operator('config_unreadable', 'The config file cannot be read.', (file: string, why: string) => ({
    message: `Cannot read config file ${file}: ${why}`,
  })),
  usageError: operator('usage_error', 'The command line is wrong (see `--help`).', withReason),
  apiKeyMissing: operator(
    'api_key_missing',
    'Authentication is on but no API key was ever configured.',
    fixed(
      'Authentication is enabled but no API key is configured: set VIGIL_API_KEY (at least 16 characters) for the first start.',
    ),
  ),
  dataDirLocked: operator(
    'data_dir_locked',
    'Another Vigil process uses the data directory (exit code 15).',
    (message: string, pid: number | null) => ({ message, details: pid === null ? {} : { pid } }),
  ),
  cursorKeyInvalid: operator('cursor_key_invalid', 'The cursor signing key file is damaged.', (path: string) => ({
    message: `${path} is shorter than 32 bytes; delete it to generate a new one (existing cursors become invalid).`,
  })),
  monitorKeyInvalid: operator('monitor_key_invalid', 'The monitor credential key file is damaged.', (path: string) => ({
    message: `${path} must hold exactly 32 bytes; restore it from backup (monitor URLs cannot be decrypted without it).`,
  })),
  dataDirUnusable: operator(
    'data_dir_unusable',
    'The data directory cannot be created or written (missing parent, read-only file system, permissions).',
    (dir: string, why: string) => ({
      message: `The data directory ${dir} is not usable: ${why}. Set [server] data_dir (or VIGIL_DATA_DIR) to a writable directory.`,
      details: { dir },
    }),
  ),
  backupInvalid: operator(
    'backup_invalid',
    'A backup archive is unreadable, incomplete or fails its checksums; nothing was restored.',
    (file: string, why: string) => ({
      message: `${file} is not a valid Vigil backup: ${why}. Nothing was restored.`,
      details: { file },
    }),
  ),
  restoreTargetInUse: operator(
    'restore_target_in_use',
    'Restore needs a stopped daemon and an empty data directory (or --force, which moves the current contents aside).',
    withReason,
  ),
  portInUse: operator(
    'port_in_use',
    'The configured host:port cannot be bound (another process has it, or the user may not bind it).',
    (host: string, port: number, why: string) => ({
      message: `Cannot listen on ${host}:${port}: ${why}. Stop the other process or set [server] port (or VIGIL_PORT).`,
      details: { host, port },
    }),
  ),
  schemaTooNew: operator(
    'schema_too_new',
    'The data directory, backup or fleet database was written by a newer Vigil (a migration this build does not know); exit code 17, not restarted by the unit. Install that version (or a newer one) again, or restore a backup this version made.',
    (what: string, found: number, known: number) => ({
      message: `${what} has schema version ${found}, written by a newer Vigil; this build knows up to ${known}. Install that version (or a newer one) again, or restore a backup this version made: nothing was changed.`,
      details: { schema_version: found, known_schema_version: known },
    }),
  ),
  storeMisconfigured: operator(
    'store_misconfigured',
    'Fleet mode: the PostgreSQL database refuses this box (wrong or missing password, unreadable `password_file`, missing database or role, missing privilege); exit code 16, not restarted by the unit.',
    (message: string, sqlstate?: string) => ({
      message: `[store] ${message}`,
      details: sqlstate ? { sqlstate } : {},
    }),
  ),
} as const;

/** Every code the service can report, in catalogue order (the error table of docs/api.md). */
export function errorCatalogue(): readonly ErrorSpec[] {
  return specs;
}

export type ErrorName = keyof typeof Errors;
