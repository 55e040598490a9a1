import type { Logger } from 'pino';
import type { AuditLog } from './auditLog.js';
import type { UserService } from './userService.js';

const HOUR_MS = 3_600_000;

/**
 * Hourly (and once at start): deletes ended sessions (they already fail every check; this only keeps the
 * table small) and audit entries past `[audit] retention_days`.
 */
export class AccountHousekeeping {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly users: UserService,
    private readonly audit: AuditLog,
    private readonly retentionDays: number,
    private readonly log: Logger,
    private readonly intervalMs = HOUR_MS,
  ) {}

  start(): void {
    this.run();
    this.timer = setInterval(() => this.run(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  run(): void {
    try {
      const sessions = this.users.prune();
      const entries = this.audit.prune(this.retentionDays);
      if (sessions || entries)
        this.log.info({ sessions, audit_entries: entries }, 'ended sessions and old audit entries deleted');
    } catch (e) {
      this.log.error({ err: e }, 'ended sessions and old audit entries could not be deleted');
    }
  }
}
