#!/usr/bin/env node
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/load.js';
import { isVigilError } from '../contract/errors.js';
import { VERSION } from '../contract/version.js';

const USAGE = `vigil ${VERSION}

Usage:
  vigil serve [--config FILE]              run the daemon (config path also from VIGIL_CONFIG)
  vigil models list|info|install|verify    manage model packs (vigil models --help)
  vigil addons install|verify liveness     manage the liveness addon's models (vigil addons --help)
  vigil workspaces create|list|set-quota   scraper workspaces (vigil workspaces --help)
  vigil keys create|list|revoke            workspace API keys
  vigil gallery import COLLECTION FILE.ndjson [--url URL] [--contract ID] [--batch-size N]
                                           bulk import into the running daemon (API key in VIGIL_API_KEY)
  vigil store migrate --to postgres [--url URL]
                                           copy this (stopped) box's gallery into PostgreSQL for fleet mode
  vigil mcp --workspace ID [--url URL]     MCP server on stdio, forwarding to the daemon (key in VIGIL_WORKSPACE_KEY)
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
    case 'models':
    case 'addons': {
      // The models dir, catalog and auto_download come from server.toml, so installs fill what `serve` reads.
      const configIndex = rest.findIndex((a) => a === '--config' || a === '-c');
      const configPath = configIndex >= 0 ? rest[configIndex + 1] : undefined;
      const args = configIndex >= 0 ? rest.filter((_, i) => i !== configIndex && i !== configIndex + 1) : rest;
      const { config, file } = loadConfig(configPath);
      const options = { defaultModelsDir: config.server.models_dir, configFile: file ? resolve(file) : null, autoDownload: config.addons.auto_download, catalog: config.server.model_catalog };
      if (command === 'addons') return (await import('./addons.js')).runAddonsCommand(args, undefined, options);
      return (await import('./models.js')).runModelsCommand(args, undefined, options);
    }
    case 'workspaces':
    case 'keys': {
      const { runWorkspacesCommand } = await import('./workspaces.js');
      return runWorkspacesCommand(command, rest);
    }
    case 'gallery': {
      const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: {
        config: { type: 'string', short: 'c' }, url: { type: 'string' }, contract: { type: 'string' }, 'batch-size': { type: 'string', default: '1000' },
      } });
      if (positionals[0] !== 'import' || positionals.length !== 3) {
        process.stderr.write('usage: vigil gallery import COLLECTION FILE.ndjson [--url http://127.0.0.1:8080] [--contract ID] [--batch-size N] [--config FILE]\n');
        return 2;
      }
      const { config } = loadConfig(values.config);
      const host = ['0.0.0.0', '::', ''].includes(config.server.host) ? '127.0.0.1' : config.server.host;
      const { runGalleryImport } = await import('./gallery.js');
      return runGalleryImport({
        url: values.url ?? `http://${host}:${config.server.port}`, key: process.env.VIGIL_API_KEY ?? null, collection: positionals[1]!, file: positionals[2]!,
        contractId: values.contract ?? null, batchSize: Number(values['batch-size']),
      });
    }
    case 'store':
      return (await import('./store.js')).runStoreCommand(rest);
    case 'mcp': {
      const { values } = parseArgs({ args: rest, options: { config: { type: 'string', short: 'c' }, workspace: { type: 'string', short: 'w' }, url: { type: 'string' } } });
      const key = process.env.VIGIL_WORKSPACE_KEY;
      if (!values.workspace || !key) {
        process.stderr.write('usage: VIGIL_WORKSPACE_KEY=vgl_… vigil mcp --workspace ID [--url http://127.0.0.1:8080] [--config FILE]\n');
        return 2;
      }
      const { config } = loadConfig(values.config);
      const host = ['0.0.0.0', '::', ''].includes(config.server.host) ? '127.0.0.1' : config.server.host;
      const { runMcpStdio } = await import('../mcp/stdio.js');
      return runMcpStdio({ url: values.url ?? `http://${host}:${config.server.port}`, workspaceId: values.workspace, key, style: config.scrapers.mcp_tool_names });
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
    process.stderr.write(`vigil: error: ${isVigilError(e) ? `${e.code}: ${e.message}` : e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(isVigilError(e) ? 2 : 1);
  },
);
