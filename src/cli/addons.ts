/**
 * `vigil addons install|verify liveness`: the addon's files only; neither command changes the config
 * (use `vigil models install <pack> --enable-liveness` or the API's enable action for that).
 */
import { parseArgs } from 'node:util';
import { Errors, isVigilError } from '../contract/errors.js';
import { inspectLiveness, installLiveness, LIVENESS, addonInstallCommand } from '../addons/livenessFiles.js';
import { resolveCatalog } from '../models/catalog.js';
import { formatAddon, resolveModelsDir, type ModelsCommandIo, type ModelsCommandOptions } from './models.js';

const USAGE = `Usage: vigil addons install|verify liveness [--from DIR|URL] [--models-dir DIR]

  install   download the liveness models (mirror first, then the pinned upstream URLs) and verify their SHA-256
  verify    check the installed files against the pinned SHA-256 (never downloads)
`;

export async function runAddonsCommand(
  argv: string[],
  io: ModelsCommandIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  options: ModelsCommandOptions = {},
): Promise<number> {
  try {
    let parsed;
    try {
      parsed = parseArgs({
        args: argv,
        options: { from: { type: 'string' }, 'models-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
        allowPositionals: true,
        strict: true,
      });
    } catch (e) {
      throw Errors.usageError(`${(e as Error).message} (see vigil addons --help)`);
    }
    const { values, positionals } = parsed;
    if (values.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    const [command, addon, ...extra] = positionals;
    if (command !== 'install' && command !== 'verify')
      throw Errors.usageError('expected install or verify (see vigil addons --help)');
    if (addon !== LIVENESS || extra.length > 0)
      throw Errors.usageError('the only addon is "liveness" (see vigil addons --help)');
    if (command === 'verify' && values.from !== undefined) throw Errors.usageError('--from does not apply to "verify"');
    const modelsDir = resolveModelsDir(values['models-dir'], options);
    const env = options.env ?? process.env;
    if (command === 'install') {
      io.stdout.write(
        formatAddon(
          await installLiveness({ catalog: options.catalog, modelsDir, mirror: values.from, env, stderr: io.stderr }),
        ),
      );
      return 0;
    }
    const state = await inspectLiveness(await resolveCatalog(options.catalog), modelsDir);
    if (state.invalid.length > 0) {
      throw Errors.addonModelInvalid(
        `${state.invalid.map((f) => `${f.file}: ${f.problem}`).join('; ')} in ${state.dir}`,
        { status: 409 },
      );
    }
    if (state.missing.length > 0) {
      throw Errors.addonModelMissing(
        `${state.missing.join(', ')} missing from ${state.dir}; install with: ${addonInstallCommand(modelsDir)}`,
        { status: 404 },
      );
    }
    io.stdout.write(`liveness: ok (${state.models.map((m) => m.file).join(', ')} verified in ${state.dir})\n`);
    return 0;
  } catch (err) {
    io.stderr.write(
      `vigil addons: error: ${isVigilError(err) ? `${err.code}: ${err.message}` : `internal_error: ${(err as Error)?.message ?? String(err)}`}\n`,
    );
    return 2;
  }
}
