#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/load.js';
import { isApiError } from '../errors.js';
import { VERSION } from '../version.js';

const USAGE = `vigil ${VERSION}

Usage:
  vigil serve [--config FILE]              run the daemon (config path also from VIGIL_CONFIG)
  vigil models list|info|install|verify    manage model packs (vigil models --help)
  vigil --version
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve': {
      const { values } = parseArgs({ args: rest, options: { config: { type: 'string', short: 'c' } } });
      const { runServeCommand } = await import('./serve.js');
      return runServeCommand({ config: values.config });
    }
    case 'models': {
      const { runModelsCommand } = await import('./models.js');
      // The models dir defaults to the one in server.toml, so `vigil models install` fills what `serve` reads.
      const configIndex = rest.findIndex((a) => a === '--config' || a === '-c');
      const configPath = configIndex >= 0 ? rest[configIndex + 1] : undefined;
      const args = configIndex >= 0 ? rest.filter((_, i) => i !== configIndex && i !== configIndex + 1) : rest;
      const defaultModelsDir = loadConfig(configPath).config.server.models_dir;
      return runModelsCommand(args, undefined, { defaultModelsDir });
    }
    case '--version':
    case 'version':
      process.stdout.write(`${VERSION}\n`);
      return 0;
    case undefined:
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return command ? 0 : 2;
    default:
      process.stderr.write(`vigil: unknown command "${command}"\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`vigil: error: ${isApiError(e) ? `${e.code}: ${e.message}` : e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(isApiError(e) ? 2 : 1);
  },
);
