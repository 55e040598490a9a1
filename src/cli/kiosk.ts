import { KioskTokenStore } from '../auth/kioskTokenStore.js';
import { loadConfig } from '../config/load.js';
import { Errors } from '../contract/errors.js';
import { kioskPath } from '../http/routes/kiosk.js';
import { openDatabase } from '../store/database.js';
import { AuditLog, cliActor } from '../users/auditLog.js';
import { parseCommandLine } from './commandLine.js';
import type { CliIo } from './workspaces.js';

export const KIOSK_USAGE = `Usage:
  vigil kiosk create --monitor ID [--monitor ID2 …] [--label TEXT] [--base-url URL]
                     a preview-only token for those monitors; prints the kiosk URL(s) once (only a hash is stored)
  vigil kiosk list                 tokens with their monitors, last use and revocation
  vigil kiosk revoke TOKEN_ID      the kiosk stops at its next request; its open previews end within a second
Common: --config FILE (the daemon's server.toml, for data_dir), --json, -h/--help
Works while the daemon runs (straight on its SQLite file).
`;

/** `vigil kiosk …`: preview-only kiosk tokens. */
export async function runKioskCommand(
  argv: string[],
  configFile: string | undefined,
  io: CliIo = process,
): Promise<number> {
  const { values, positionals } = parseCommandLine('kiosk', {
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string', short: 'c' },
      monitor: { type: 'string', short: 'm', multiple: true },
      label: { type: 'string' },
      'base-url': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [action, ...rest] = positionals;
  if (values.help || !action) {
    io.stdout.write(KIOSK_USAGE);
    return values.help ? 0 : 2;
  }
  const { config } = loadConfig(values.config ?? configFile);
  const db = openDatabase(config.server.data_dir, undefined, { lock: false });
  try {
    const store = new KioskTokenStore(db.db);
    // What this command changes goes into the daemon's audit log, as the same operation over the API would.
    const audit = (operationId: string, detail: Record<string, unknown>) =>
      new AuditLog(db.db).record({ source: 'cli', actor_type: 'cli', actor: cliActor(), action: operationId, detail });
    const out = (json: unknown, text: string) =>
      io.stdout.write(values.json ? `${JSON.stringify(json, null, 2)}\n` : text);
    switch (action) {
      case 'create': {
        const monitors = values.monitor ?? [];
        if (monitors.length === 0)
          throw Errors.usageError('--monitor ID is required (repeat it for several monitors).');
        const host = ['0.0.0.0', '::', ''].includes(config.server.host) ? '<this-box>' : config.server.host;
        const base = (values['base-url'] ?? `http://${host}:${config.server.port}`).replace(/\/$/, '');
        const { token, kiosk } = store.create(monitors, values.label ?? '');
        audit('create_kiosk_token_v1_kiosk_tokens_post', { token_id: kiosk.id, monitor_ids: kiosk.monitor_ids });
        const urls = Object.fromEntries(kiosk.monitor_ids.map((m) => [m, base + kioskPath(m, token)]));
        out(
          { kiosk_token: kiosk, token, kiosk_urls: urls },
          `created kiosk token ${kiosk.id} (${kiosk.prefix}…) for ${kiosk.monitor_ids.join(', ')}\n${Object.values(urls)
            .map((u) => `  ${u}\n`)
            .join('')}` +
            'The URL carries the token: it is shown only now. Revoke with: vigil kiosk revoke ' +
            kiosk.id +
            '\n',
        );
        return 0;
      }
      case 'list': {
        const rows = store.list();
        out(
          rows,
          rows.length
            ? rows
                .map(
                  (k) =>
                    `${k.id}\t${k.prefix}…\t${k.monitor_ids.join(',')}\t${k.label}\t${k.revoked_at ? `revoked ${k.revoked_at}` : `last used ${k.last_used_at ?? 'never'}`}\n`,
                )
                .join('')
            : 'no kiosk tokens\n',
        );
        return 0;
      }
      case 'revoke': {
        if (rest.length !== 1) throw Errors.usageError('usage: vigil kiosk revoke TOKEN_ID');
        const k = store.revoke(rest[0]!);
        audit('revoke_kiosk_token_v1_kiosk_tokens__token_id__delete', { token_id: k.id });
        out(k, `revoked ${k.id}\n`);
        return 0;
      }
      default:
        throw Errors.usageError(`unknown action "${action}" (see vigil kiosk --help)`);
    }
  } finally {
    db.close();
  }
}
