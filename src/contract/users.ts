import { z } from 'zod';
import { formField, formInt, nextCursor, requestId, schemaId as id } from './common.js';

/**
 * User accounts, browser sessions and the audit log (Vigil extension: /v1/auth, /v1/users, /v1/audit).
 * Roles are ordered: each one may do what the roles below it may.
 */
export const ROLES = ['viewer', 'operator', 'admin'] as const;
export const Role = z.enum(ROLES).describe('viewer < operator < admin; each role may do what the roles below it may.');
export type RoleT = z.infer<typeof Role>;

/** Whether a credential of role `have` may call an operation that requires `need`. */
export const roleAllows = (have: RoleT, need: RoleT): boolean => ROLES.indexOf(have) >= ROLES.indexOf(need);

export const USERNAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
export const Username = z
  .string()
  .regex(USERNAME_PATTERN, 'usernames match ^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$')
  .describe('1 to 64 characters: letters, digits, . _ @ - (case-insensitive: "Ana" and "ana" are one user).');
/** The password rules (length in characters and bytes) are checked by the service, with a reason, not here. */
const Password = z.string().max(4096).describe('At least 10 characters and at most 256 bytes (UTF-8).');

export const User = z
  .looseObject({
    id: z.string(),
    username: z.string(),
    role: Role,
    created_at: z.string(),
    updated_at: z.string(),
    password_changed_at: z.string(),
    last_sign_in_at: z.string().nullable(),
  })
  .meta(id('User'));
export type UserT = z.infer<typeof User>;

export const UserCreate = z.strictObject({ username: Username, password: Password, role: Role }).meta(id('UserCreate'));
export type UserCreateT = z.infer<typeof UserCreate>;

export const UserPatch = z
  .strictObject({
    role: Role.optional(),
    password: Password.optional().describe('A new password; the user is signed out everywhere.'),
  })
  .meta(id('UserPatch'));
export type UserPatchT = z.infer<typeof UserPatch>;

export const UserResponse = z.looseObject({ request_id: requestId, user: User }).meta(id('UserResponse'));
export const UserListResponse = z
  .looseObject({ request_id: requestId, users: z.array(User) })
  .meta(id('UserListResponse'));

export const LoginRequest = z
  .strictObject({ username: z.string().max(256), password: Password })
  .meta(id('LoginRequest'));
export type LoginRequestT = z.infer<typeof LoginRequest>;

export const SetupRequest = z
  .strictObject({
    setup_code: z.string().max(64).describe('The one-time code the daemon printed at start (no user existed).'),
    username: Username,
    password: Password,
  })
  .meta(id('SetupRequest'));
export type SetupRequestT = z.infer<typeof SetupRequest>;

export const PasswordChange = z
  .strictObject({ current_password: Password, new_password: Password })
  .meta(id('PasswordChange'));
export type PasswordChangeT = z.infer<typeof PasswordChange>;

export const Session = z
  .looseObject({
    id: z.string(),
    user_id: z.string(),
    username: z.string(),
    role: Role,
    created_at: z.string(),
    last_seen_at: z.string(),
    idle_expires_at: z.string().describe('The session ends here unless it is used before.'),
    expires_at: z.string().describe('The session ends here whatever its use ([auth] session_max_hours).'),
    address: z.string(),
    user_agent: z.string(),
    current: z.boolean().describe('The session of this request.'),
  })
  .meta(id('Session'));
export type SessionT = z.infer<typeof Session>;

export const SessionResponse = z.looseObject({ request_id: requestId, session: Session }).meta(id('SessionResponse'));
export const SessionListResponse = z
  .looseObject({ request_id: requestId, sessions: z.array(Session) })
  .meta(id('SessionListResponse'));

/** What admitted a request: a user's session, the API key, or nothing when [auth] enabled = false. */
export const Whoami = z
  .looseObject({
    request_id: requestId,
    credential: z.enum(['session', 'api_key', 'open']),
    role: Role,
    user: User.nullable(),
    session: Session.nullable(),
    csrf_token: z
      .string()
      .nullable()
      .describe('Send it as X-CSRF-Token on every request that is not GET/HEAD while signed in with the cookie.'),
  })
  .meta(id('Whoami'));

export const SetupStatus = z
  .looseObject({
    request_id: requestId,
    setup_required: z
      .boolean()
      .describe('No user exists yet: the sign-in page offers the first-admin form with the set-up code.'),
    auth_enabled: z.boolean(),
  })
  .meta(id('SetupStatus'));

// ---- the audit log ----

export const AUDIT_ACTOR_TYPES = ['user', 'api_key', 'kiosk', 'cli', 'anonymous'] as const;
export const AuditEntry = z
  .looseObject({
    id: z.string(),
    at: z.string(),
    source: z.enum(['api', 'cli']),
    actor_type: z.enum(AUDIT_ACTOR_TYPES),
    actor: z.string().describe('The username, "api key #<id>", or the operating-system user of a CLI command.'),
    user_id: z.string().nullable(),
    session_id: z.string().nullable(),
    address: z.string().nullable(),
    action: z.string().describe('The operationId of the API operation (the CLI records the matching one).'),
    method: z.string().nullable(),
    path: z.string().nullable(),
    status: z.int().nullable().describe('The HTTP status of the answer (null for the CLI).'),
    error_code: z.string().nullable(),
    request_id: z.string().nullable(),
    detail: z.record(z.string(), z.unknown()),
  })
  .meta(id('AuditEntry'));
export type AuditEntryT = z.infer<typeof AuditEntry>;

const time = formField(z.iso.datetime({ offset: true }).optional());
export const AuditQuery = z.object({
  limit: formInt(1, 500, 50),
  cursor: z.string().nullish(),
  actor: formField(z.string().max(256).optional()).describe('Only entries of this actor (username, api key #N, …).'),
  action: formField(z.string().max(200).optional()).describe('Only entries of this operationId.'),
  since: time.describe('Entries at or after this time (ISO 8601).'),
  until: time.describe('Entries before this time (ISO 8601).'),
});
export type AuditQueryT = z.infer<typeof AuditQuery>;

export const AuditPageResponse = z
  .looseObject({ request_id: requestId, entries: z.array(AuditEntry), next_cursor: nextCursor })
  .meta(id('AuditPageResponse'));
