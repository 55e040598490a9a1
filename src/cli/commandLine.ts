import { parseArgs, type ParseArgsConfig } from 'node:util';
import { Errors } from '../contract/errors.js';

/** node:util parseArgs with its TypeErrors turned into one usage line that points at the command's help. */
export function parseCommandLine<T extends ParseArgsConfig>(command: string, config: T) {
  try {
    return parseArgs(config);
  } catch (e) {
    throw Errors.usageError(`${(e as Error).message.split('. To specify')[0]} (see vigil ${command} --help)`);
  }
}
