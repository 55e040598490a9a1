import type { Readable } from 'node:stream';
import { loadConfig } from '../config/load.js';
import { Errors } from '../contract/errors.js';
import { Role, USERNAME_PATTERN, type RoleT } from '../contract/users.js';
import { openDatabase } from '../store/database.js';
import { AuditLog, cliActor } from '../users/auditLog.js';
import { UserService } from '../users/userService.js';
import { UserStore } from '../users/userStore.js';
import { parseCommandLine } from './commandLine.js';
import type { CliIo } from './workspaces.js';

export const USERS_USAGE = `Usage:
  vigil users add NAME --role admin|operator|viewer [--password-stdin]
                          a user who signs in to the web UI with a password (asked twice on the terminal)
  vigil users list        users with their role and last sign-in
  vigil users passwd NAME [--password-stdin]
                          a new password; the user is signed out everywhere
  vigil users remove NAME the user and its sessions
Common: --config FILE (the daemon's server.toml, for data_dir), --json, -h/--help
--password-stdin reads the password from standard input (one line; the newline is not part of it).
Works while the daemon runs (straight on its SQLite file); each change is in the audit log (source cli).
`;

/** Where a password comes from: a terminal (asked without echo) or whatever stdin holds (--password-stdin). */
export interface PasswordInput {
  stdin: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  /** Prompts go here, not to stdout, so `--json` output stays parseable. */
  prompt: { write(s: string): unknown };
}

/** All of stdin, less one trailing newline (echo, a file, a secret store's pipe all end with one). */
async function readAll(stdin: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** One line from a terminal without echoing it. */
function askHidden(input: PasswordInput, question: string): Promise<string> {
  const { stdin } = input;
  input.prompt.write(question);
  return new Promise((resolve, reject) => {
    let typed = '';
    stdin.setRawMode?.(true);
    stdin.resume();
    const done = (value: string | null) => {
      stdin.off('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      input.prompt.write('\n');
      if (value === null) reject(Errors.usageError('cancelled'));
      else resolve(value);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done(typed);
        if (ch === '\u0003' || ch === '\u0004') return done(null);
        if (ch === '\u007f' || ch === '\b') typed = [...typed].slice(0, -1).join('');
        else typed += ch;
      }
    };
    stdin.on('data', onData);
  });
}

async function newPassword(input: PasswordInput, fromStdin: boolean, username: string): Promise<string> {
  if (fromStdin) return readAll(input.stdin);
  if (!input.stdin.isTTY)
    throw Errors.usageError('no terminal to ask for the password: pipe it in with --password-stdin');
  const first = await askHidden(input, `New password for ${username}: `);
  const again = await askHidden(input, 'Again: ');
  if (first !== again) throw Errors.usageError('the two passwords differ; nothing was changed');
  return first;
}

/** `vigil users …`: accounts for the web UI, on the daemon's SQLite file. */
export async function runUsersCommand(
  argv: string[],
  configFile: string | undefined,
  io: CliIo = process,
  input: PasswordInput = { stdin: process.stdin, prompt: process.stderr },
): Promise<number> {
  const { values, positionals } = parseCommandLine('users', {
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string', short: 'c' },
      role: { type: 'string', short: 'r' },
      'password-stdin': { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [action, name, ...extra] = positionals;
  if (values.help || !action) {
    io.stdout.write(USERS_USAGE);
    return values.help ? 0 : 2;
  }
  if (extra.length) throw Errors.usageError(`unexpected argument "${extra[0]}" (see vigil users --help)`);
  const needsName = action !== 'list';
  if (needsName && !name) throw Errors.usageError(`usage: vigil users ${action} NAME (see vigil users --help)`);
  if (needsName && !USERNAME_PATTERN.test(name!))
    throw Errors.usageError(`"${name}" is not a username: letters, digits, . _ @ - (at most 64, starting alnum)`);
  let role: RoleT | undefined;
  if (action === 'add') {
    const r = Role.safeParse(values.role);
    if (!r.success) throw Errors.usageError('--role admin|operator|viewer is required');
    role = r.data;
  }

  const { config } = loadConfig(values.config ?? configFile);
  const db = openDatabase(config.server.data_dir, undefined, { lock: false });
  try {
    const users = new UserService(new UserStore(db.db), {
      idleMs: config.auth.session_idle_minutes * 60_000,
      maxMs: config.auth.session_max_hours * 3_600_000,
    });
    const audit = new AuditLog(db.db);
    const record = (operationId: string, detail: Record<string, unknown>) =>
      audit.record({ source: 'cli', actor_type: 'cli', actor: cliActor(), action: operationId, detail });
    const out = (json: unknown, text: string) =>
      io.stdout.write(values.json ? `${JSON.stringify(json, null, 2)}\n` : text);
    switch (action) {
      case 'add': {
        const password = await newPassword(input, values['password-stdin'] === true, name!);
        const user = await users.create({ username: name!, password, role: role! });
        record('create_user_v1_users_post', { username: user.username, role: user.role });
        out(user, `created ${user.role} ${user.username} (${user.id}); sign in at the web UI\n`);
        return 0;
      }
      case 'list': {
        const rows = users.list();
        out(
          rows,
          rows.length
            ? rows
                .map((u) => `${u.username}\t${u.role}\t${u.id}\tlast sign-in ${u.last_sign_in_at ?? 'never'}\n`)
                .join('')
            : 'no users (the daemon prints a set-up code at start; or: vigil users add NAME --role admin)\n',
        );
        return 0;
      }
      case 'passwd': {
        const existing = users.byName(name!);
        const password = await newPassword(input, values['password-stdin'] === true, existing.username);
        const user = await users.update(existing.id, { password });
        record('update_user_v1_users__user_id__patch', { username: user.username, password_changed: true });
        out(user, `password of ${user.username} changed; its sessions have ended\n`);
        return 0;
      }
      case 'remove': {
        const user = users.remove(users.byName(name!).id);
        record('delete_user_v1_users__user_id__delete', { username: user.username });
        out(user, `removed ${user.username}; its sessions have ended\n`);
        return 0;
      }
      default:
        throw Errors.usageError(`unknown action "${action}" (see vigil users --help)`);
    }
  } finally {
    db.close();
  }
}
