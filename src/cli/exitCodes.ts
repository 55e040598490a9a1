import { isVigilError } from '../contract/errors.js';

/**
 * Exit codes of `vigil` (documented in docs/operations/exit-codes.md and used by systemd/vigil.service): the configuration
 * ones are in RestartPreventExitStatus=, so systemd does not restart a misconfigured box forever.
 */
export const EXIT = {
  ok: 0,
  /** Anything unexpected (the log has the details). */
  failure: 1,
  /** The command line is wrong. */
  usage: 2,
  /** server.toml or the environment is invalid or unreadable, or no API key is configured. */
  config: 10,
  /** [inference] model_pack names no pack of the catalog. */
  unknownPack: 11,
  /** The configured model pack (or an enabled addon) is not installed or does not load. */
  modelsMissing: 12,
  /** The data directory cannot be created or written (missing parent, read-only, permissions). */
  dataDir: 13,
  /** The port is taken (or may not be bound by this user). */
  portInUse: 14,
  /** Another Vigil process holds the data directory. */
  dataDirLocked: 15,
  /**
   * Fleet mode: PostgreSQL refuses this box (password, database, role, privilege). Not retried: a restart
   * asks the same question and gets the same answer. An unreachable database is no exit at all: the box
   * starts degraded on its replica and reconnects by itself (docs/operations/exit-codes.md says why).
   */
  storeMisconfigured: 16,
  /**
   * The data dir, backup or fleet database holds a migration this build does not know (a newer build wrote
   * it: a downgrade). Not retried: the same build refuses the same file again.
   */
  schemaTooNew: 17,
} as const;

/** The configuration exit codes (systemd must not restart on these). */
export const CONFIG_EXIT_CODES = [
  EXIT.config,
  EXIT.unknownPack,
  EXIT.modelsMissing,
  EXIT.dataDir,
  EXIT.storeMisconfigured,
  EXIT.schemaTooNew,
];

export function exitCodeFor(e: unknown): number {
  if (!isVigilError(e)) {
    const code = (e as NodeJS.ErrnoException | null)?.code;
    if (code === 'EADDRINUSE' || (code === 'EACCES' && (e as { syscall?: string }).syscall === 'listen'))
      return EXIT.portInUse;
    return EXIT.failure;
  }
  switch (e.code) {
    case 'usage_error':
      return EXIT.usage;
    case 'config_invalid':
    case 'config_unreadable':
    case 'api_key_missing':
      return EXIT.config;
    case 'model_pack_unknown':
      return EXIT.unknownPack;
    case 'model_not_installed':
    case 'model_load_failed':
    case 'addon_model_missing':
    case 'addon_model_invalid':
      return EXIT.modelsMissing;
    case 'data_dir_unusable':
      return EXIT.dataDir;
    case 'port_in_use':
      return EXIT.portInUse;
    case 'data_dir_locked':
    case 'restore_target_in_use':
      return EXIT.dataDirLocked;
    case 'store_misconfigured':
      return EXIT.storeMisconfigured;
    case 'schema_too_new':
      return EXIT.schemaTooNew;
    case 'backup_invalid':
      return EXIT.failure;
    default:
      return EXIT.failure;
  }
}
