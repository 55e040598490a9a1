import pino, { type Logger } from 'pino';

/** JSON logs on stdout (journald captures them under systemd). */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'vigil' }, timestamp: pino.stdTimeFunctions.isoTime });
}
