import type { z } from 'zod';
import { Errors } from './errors.js';

/** Validation shared by REST, MCP and the CLI: the first zod issue becomes a 400 invalid_request naming the field. */
export const invalid = (message: string, details: Record<string, unknown> = {}) =>
  Errors.invalidRequest(message, details);

export function validate<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = issue.path.join('.');
  const what = issue.code === 'unrecognized_keys' ? `unknown field(s) ${issue.keys.join(', ')}` : issue.message;
  throw invalid(path ? `${path}: ${what}` : what, { field: path });
}
