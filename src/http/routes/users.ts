import { Errors } from '../../contract/errors.js';
import {
  AuditPageResponse,
  AuditQuery,
  LoginRequest,
  PasswordChange,
  SessionListResponse,
  SessionResponse,
  SetupRequest,
  SetupStatus,
  UserCreate,
  UserListResponse,
  UserPatch,
  UserResponse,
  Whoami,
  type LoginRequestT,
  type PasswordChangeT,
  type SetupRequestT,
  type UserCreateT,
  type UserPatchT,
} from '../../contract/users.js';
import type { FailureThrottle } from '../../auth/failureThrottle.js';
import type { SignedIn } from '../../users/userService.js';
import { roleOf } from '../auth.js';
import type { AuthorizedStreams } from '../authorizedStreams.js';
import { clearSessionCookie, isSameOriginBrowserRequest, setSessionCookie } from '../browserSession.js';
import { readJson, readQuery } from '../input.js';
import type { AppContext, RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

const Session = '/v1/auth/sessions/{session_id}';
const User = '/v1/users/{user_id}';

/**
 * Password sign-in with a session cookie, the first admin, sessions, users and the audit log. `throttle`:
 * the per-address failure budget shared with the API key; `streams`: open previews, ended when the
 * session that opened one is revoked or its user removed.
 */
export function userRoutes(rt: Runtime, streams: AuthorizedStreams, throttle: FailureThrottle): RouteSpec[] {
  const { config } = rt.loaded;
  const users = rt.users;
  const maxBytes = config.server.max_request_bytes;
  const cookieSeconds = config.auth.session_max_hours * 3600;

  /** Sign-ins and set-up codes share the address's budget with wrong keys: 429 once it is spent. */
  const throttled = async <T>(ctx: AppContext, attempt: () => Promise<T>, counts: string): Promise<T> => {
    const wait = throttle.blockedFor(ctx.ip);
    if (wait > 0) throw Errors.tooManyAuthFailures(wait);
    try {
      return await attempt();
    } catch (e) {
      if ((e as { code?: string }).code === counts) throw (throttle.failed(ctx.ip), e);
      throw e;
    }
  };
  const client = (ctx: AppContext) => ({ address: ctx.ip, userAgent: ctx.get('User-Agent') });
  const signedIn = (ctx: AppContext, s: SignedIn, status: number) => {
    setSessionCookie(ctx, s.token, cookieSeconds);
    ctx.state.credential = {
      kind: 'session',
      sessionId: s.session.id,
      userId: s.user.id,
      username: s.user.username,
      role: s.user.role,
      csrfToken: s.csrfToken,
    };
    ctx.status = status;
    ctx.body = {
      request_id: ctx.state.requestId,
      credential: 'session',
      role: s.user.role,
      user: s.user,
      session: s.session,
      csrf_token: s.csrfToken,
    };
  };
  const sessionOf = (ctx: AppContext) => {
    const c = ctx.state.credential;
    if (c?.kind !== 'session') throw Errors.notSignedIn();
    return c;
  };
  /** Sessions, users and roles changed: previews opened by what ended must end now, not at the next re-check. */
  const changed = () => streams.recheck();

  return [
    {
      method: 'post',
      path: '/v1/auth/login',
      operationId: 'login_v1_auth_login_post',
      summary: 'Sign In',
      tags: ['auth'],
      public: true,
      description:
        'Password sign-in for the web UI: sets the HttpOnly, SameSite=Strict session cookie (Secure over HTTPS) and returns the CSRF token to send as X-CSRF-Token with every request that changes something. A wrong username or password is 401 invalid_credentials and counts against the address ([auth] max_failures, shared with wrong API keys). API clients keep using the Bearer key.',
      body: { contentType: 'application/json', schema: LoginRequest },
      success: { status: 200, schema: Whoami },
      handler: async (ctx) => {
        const body = (await readJson(ctx, LoginRequest, maxBytes)) as LoginRequestT;
        ctx.state.auditDetail = { username: body.username };
        // A login form posted from another site would sign the victim in as the attacker (login CSRF).
        if (!isSameOriginBrowserRequest(ctx)) throw Errors.csrfFailed('cross_site');
        const s = await throttled(
          ctx,
          () => users.signIn(body.username, body.password, client(ctx)),
          'invalid_credentials',
        );
        signedIn(ctx, s, 200);
      },
    },
    {
      method: 'post',
      path: '/v1/auth/logout',
      operationId: 'logout_v1_auth_logout_post',
      summary: 'Sign Out',
      tags: ['auth'],
      role: 'viewer',
      description: "Ends this request's session, clears the cookie and ends the previews it opened.",
      success: { status: 204, schema: null },
      handler: async (ctx) => {
        users.signOut(sessionOf(ctx).sessionId);
        clearSessionCookie(ctx);
        changed();
        ctx.status = 204;
      },
    },
    {
      method: 'get',
      path: '/v1/auth/session',
      operationId: 'whoami_v1_auth_session_get',
      summary: 'Current Credential',
      tags: ['auth'],
      role: 'viewer',
      description:
        "What this request is signed in as: a session (its user, role and CSRF token: the web UI reads it after a reload), the API key (admin) or nothing at all ([auth] enabled = false: 'open', admin).",
      success: { status: 200, schema: Whoami },
      handler: async (ctx) => {
        const c = ctx.state.credential;
        const session = c?.kind === 'session' ? users.sessions(c.userId, c.sessionId).find((s) => s.current) : null;
        ctx.body = {
          request_id: ctx.state.requestId,
          credential: c?.kind === 'session' ? 'session' : c ? 'api_key' : 'open',
          role: roleOf(c) ?? 'viewer',
          user: c?.kind === 'session' ? users.get(c.userId) : null,
          session: session ?? null,
          csrf_token: c?.kind === 'session' ? c.csrfToken : null,
        };
      },
    },
    {
      method: 'post',
      path: '/v1/auth/password',
      operationId: 'change_password_v1_auth_password_post',
      summary: 'Change Own Password',
      tags: ['auth'],
      role: 'viewer',
      description:
        "The signed-in user's new password; the current one is asked again (401 invalid_credentials, counted like a sign-in). The user's other sessions end.",
      body: { contentType: 'application/json', schema: PasswordChange },
      success: { status: 200, schema: UserResponse },
      handler: async (ctx) => {
        const session = sessionOf(ctx);
        const body = (await readJson(ctx, PasswordChange, maxBytes)) as PasswordChangeT;
        const user = await throttled(
          ctx,
          () => users.changeOwnPassword(session, body.current_password, body.new_password),
          'invalid_credentials',
        );
        changed();
        ctx.body = { request_id: ctx.state.requestId, user };
      },
    },
    {
      method: 'get',
      path: '/v1/auth/setup',
      operationId: 'setup_status_v1_auth_setup_get',
      summary: 'First-Admin Set-up Status',
      tags: ['auth'],
      public: true,
      description:
        'Whether no user exists yet, so the sign-in page offers to create the first admin with the set-up code printed at start.',
      success: { status: 200, schema: SetupStatus },
      handler: async (ctx) => {
        ctx.body = {
          request_id: ctx.state.requestId,
          setup_required: config.auth.enabled && users.setupRequired(),
          auth_enabled: config.auth.enabled,
        };
      },
    },
    {
      method: 'post',
      path: '/v1/auth/setup',
      operationId: 'setup_v1_auth_setup_post',
      summary: 'Create The First Admin',
      tags: ['auth'],
      public: true,
      description:
        'While no user exists: creates the first admin with the one-time set-up code the daemon printed at start, and signs it in. Accepted only from a page of this origin (the sign-in page); a wrong code is 401 setup_code_invalid and counts against the address. Afterwards 409 setup_not_available.',
      body: { contentType: 'application/json', schema: SetupRequest },
      success: { status: 201, schema: Whoami },
      handler: async (ctx) => {
        const body = (await readJson(ctx, SetupRequest, maxBytes)) as SetupRequestT;
        ctx.state.auditDetail = { username: body.username, role: 'admin' };
        if (!config.auth.enabled) throw Errors.setupNotAvailable();
        const browser = ctx.get('Sec-Fetch-Site') !== '' || ctx.get('Origin') !== '';
        if (!browser || !isSameOriginBrowserRequest(ctx)) throw Errors.csrfFailed('cross_site');
        const s = await throttled(
          ctx,
          () => users.setUp(body.setup_code, body.username, body.password, client(ctx)),
          'setup_code_invalid',
        );
        signedIn(ctx, s, 201);
      },
    },
    {
      method: 'get',
      path: '/v1/auth/sessions',
      operationId: 'list_sessions_v1_auth_sessions_get',
      summary: 'List Sessions',
      tags: ['auth'],
      role: 'viewer',
      description:
        "Active sessions, newest first: a user's own; an admin's (and the API key's) every user's. `current` marks this request's.",
      success: { status: 200, schema: SessionListResponse },
      handler: async (ctx) => {
        const c = ctx.state.credential;
        const own = c?.kind === 'session' && c.role !== 'admin' ? c.userId : null;
        ctx.body = {
          request_id: ctx.state.requestId,
          sessions: users.sessions(own, c?.kind === 'session' ? c.sessionId : null),
        };
      },
    },
    {
      method: 'delete',
      path: Session,
      operationId: 'revoke_session_v1_auth_sessions__session_id__delete',
      summary: 'Revoke Session',
      tags: ['auth'],
      role: 'viewer',
      description:
        "Ends a session at once (its next request is 401) and the previews it has open. Users revoke their own sessions; admins anyone's (another user's is 404 to a non-admin).",
      success: { status: 200, schema: SessionResponse },
      handler: async (ctx) => {
        const c = ctx.state.credential;
        const owner = c?.kind === 'session' && c.role !== 'admin' ? c.userId : null;
        const session = users.revokeSession(ctx.params.session_id!, owner);
        if (c?.kind === 'session' && c.sessionId === session.id) clearSessionCookie(ctx);
        ctx.state.auditDetail = { username: session.username };
        changed();
        ctx.body = { request_id: ctx.state.requestId, session };
      },
    },
    {
      method: 'get',
      path: '/v1/users',
      operationId: 'list_users_v1_users_get',
      summary: 'List Users',
      tags: ['users'],
      role: 'admin',
      success: { status: 200, schema: UserListResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, users: users.list() };
      },
    },
    {
      method: 'post',
      path: '/v1/users',
      operationId: 'create_user_v1_users_post',
      summary: 'Create User',
      tags: ['users'],
      role: 'admin',
      description:
        'A user who signs in with a password. Roles: viewer (cameras and events), operator (also enrols, manages persons, collections and cameras), admin (also users, keys, settings, exports, webhooks). 400 invalid_password names the broken rule; 409 user_exists (usernames are case-insensitive).',
      body: { contentType: 'application/json', schema: UserCreate },
      success: { status: 201, schema: UserResponse },
      handler: async (ctx) => {
        const body = (await readJson(ctx, UserCreate, maxBytes)) as UserCreateT;
        ctx.state.auditDetail = { username: body.username, role: body.role };
        const user = await users.create(body);
        ctx.status = 201;
        ctx.body = { request_id: ctx.state.requestId, user };
      },
    },
    {
      method: 'get',
      path: User,
      operationId: 'get_user_v1_users__user_id__get',
      summary: 'Get User',
      tags: ['users'],
      role: 'admin',
      success: { status: 200, schema: UserResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, user: users.get(ctx.params.user_id!) };
      },
    },
    {
      method: 'patch',
      path: User,
      operationId: 'update_user_v1_users__user_id__patch',
      summary: 'Update User',
      tags: ['users'],
      role: 'admin',
      description:
        "A new role applies to the user's next request (and open previews); a new password ends all the user's sessions. 409 last_admin when no admin would remain.",
      body: { contentType: 'application/json', schema: UserPatch },
      success: { status: 200, schema: UserResponse },
      handler: async (ctx) => {
        const body = (await readJson(ctx, UserPatch, maxBytes)) as UserPatchT;
        ctx.state.auditDetail = {
          ...(body.role ? { role: body.role } : {}),
          ...(body.password !== undefined ? { password_changed: true } : {}),
        };
        const user = await users.update(ctx.params.user_id!, body);
        ctx.state.auditDetail.username = user.username;
        changed();
        ctx.body = { request_id: ctx.state.requestId, user };
      },
    },
    {
      method: 'delete',
      path: User,
      operationId: 'delete_user_v1_users__user_id__delete',
      summary: 'Delete User',
      tags: ['users'],
      role: 'admin',
      description: 'Deletes the user and ends its sessions and previews. 409 last_admin for the only admin.',
      success: { status: 200, schema: UserResponse },
      handler: async (ctx) => {
        const user = users.remove(ctx.params.user_id!);
        ctx.state.auditDetail = { username: user.username };
        changed();
        ctx.body = { request_id: ctx.state.requestId, user };
      },
    },
    {
      method: 'get',
      path: '/v1/audit',
      operationId: 'list_audit_v1_audit_get',
      summary: 'Audit Log',
      tags: ['audit'],
      role: 'admin',
      description:
        'Who did what and when, newest first: every operation that changes something (and exports), from users (web UI), the API key and the CLI, with its status; refusals included. Kept [audit] retention_days. Filters combine; the signed cursor is bound to them.',
      query: AuditQuery,
      success: { status: 200, schema: AuditPageResponse },
      handler: async (ctx) => {
        const page = rt.audit.list(readQuery(ctx, AuditQuery));
        ctx.body = { request_id: ctx.state.requestId, entries: page.items, next_cursor: page.next_cursor };
      },
    },
  ];
}
