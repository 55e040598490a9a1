#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig } from '../config/load.js';
import { Errors, isVigilError } from '../contract/errors.js';
import { buildCommit, VERSION } from '../contract/version.js';
import { parseCommandLine } from './commandLine.js';
import { EXIT, exitCodeFor } from './exitCodes.js';

const USAGE = `vigil ${VERSION}

Usage:
  vigil serve [--config FILE]              run the daemon (config path also from VIGIL_CONFIG)
  vigil models list|info|install|verify    manage model packs (vigil models --help)
  vigil addons install|verify liveness     manage the liveness addon's models (vigil addons --help)
  vigil workspaces create|list|set-quota   scraper workspaces (vigil workspaces --help)
  vigil keys create|list|revoke            workspace API keys
  vigil gallery import COLLECTION FILE.ndjson [--url URL] [--contract ID] [--batch-size N]
                                           bulk import into the running daemon (API key in VIGIL_API_KEY)
  vigil gallery export COLLECTION FILE.ndjson [--url URL]
                                           a collection's persons, metadata, embeddings and crops
  vigil backup FILE.tar.gz                 online backup of the data dir (vigil backup --help)
  vigil restore FILE.tar.gz [--force]      verified restore on a stopped box
  vigil kiosk create|list|revoke          preview-only kiosk tokens (vigil kiosk --help)
  vigil users add|list|passwd|remove       web UI accounts with roles (vigil users --help)
  vigil config get [KEY] | set KEY VALUE   read and change server.toml's settings, applied live where they can be
  vigil monitors list|add|remove|test      cameras, through the running daemon (vigil monitors --help)
  vigil collections list|create            collections, through the running daemon (vigil collections --help)
  vigil store migrate --to postgres [--url URL]
                                           copy this (stopped) box's gallery into PostgreSQL for fleet mode
  vigil store compact                      give deleted data's disk space back (stopped box; vigil store compact --help)
  vigil mcp --workspace ID [--url URL]     MCP server on stdio, forwarding to the daemon (key in VIGIL_WORKSPACE_KEY)
  vigil doctor [--json]                    what this box can run: config, data dir, models, GStreamer, providers
  vigil --version

Every command takes --help. The config file is --config FILE, else VIGIL_CONFIG, else /etc/vigil/server.toml
when it exists, else the built-in defaults.
`;

/** Per-command help (models, addons, workspaces and keys print their own). */
const HELP: Record<string, string> = {
  serve: `Usage: vigil serve [--config FILE]

Runs the daemon. Before it listens it checks the configuration, the data directory, the model pack's name
and that the pack is installed; each problem is one line on stderr and its own exit code:
  ${EXIT.config} configuration invalid or unreadable (or no API key)   ${EXIT.unknownPack} unknown [inference] model_pack
  ${EXIT.modelsMissing} model pack / liveness addon not installed or not loadable   ${EXIT.dataDir} data directory not usable
  ${EXIT.portInUse} host:port cannot be bound                        ${EXIT.dataDirLocked} another Vigil uses the data directory
  ${EXIT.usage} bad command line                                      ${EXIT.failure} anything else
Under systemd (Type=notify) it signals READY=1 once the models are loaded.

Options:
  -c, --config FILE   server.toml (default: VIGIL_CONFIG, else /etc/vigil/server.toml when present)
  -h, --help          this help
`,
  gallery: `Usage: vigil gallery import COLLECTION FILE.ndjson [options]
       vigil gallery export COLLECTION FILE.ndjson [--url URL]

import: bulk import into the running daemon (POST /v1/collections/{id}/import). A file made by "export"
whose embedding_contract_id equals the collection's is imported as it is; from another model, every person
is re-embedded from its face crops (POST /v1/collections/{id}/persons). Progress lines on stdout.
export: GET /v1/collections/{id}/export into FILE (header line, then persons with embeddings and crops).
The API key is read from VIGIL_API_KEY.

Options:
  --url URL           the daemon (default: http://<[server] host>:<port> from the config)
  --contract ID       embedding_contract_id of the file's embeddings
  --batch-size N      rows per request (default 1000)
  --on-conflict MODE  error (default): stop at a person the collection has; skip: resume an import that was
                      cut off (persons already there with the file's faces are skipped, others reported)
  -c, --config FILE   server.toml
  -h, --help          this help
`,
  doctor: `Usage: vigil doctor [--json] [--config FILE]

Checks what this box can run, one line each (ok, warn, fail, info): the config, the data directory, the
model pack (re-hashed), jemalloc, the GStreamer elements of [monitors] pipeline and the H.264/H.265
decoders, the native search addons, and every ONNX Runtime execution provider: an available one must
really load the pack's detector. Run it as the service user (sudo -u vigil vigil doctor on a packaged box,
which is what sudo vigil doctor does). Exit code 1 when a check fails.
`,
  mcp: `Usage: VIGIL_WORKSPACE_KEY=vgl_… vigil mcp --workspace ID [--url URL] [--config FILE]

An MCP server on stdio that forwards to the daemon's /workspaces/{id} API with the workspace key.

Options:
  -w, --workspace ID  the workspace
  --url URL           the daemon (default from the config)
  -c, --config FILE   server.toml
  -h, --help          this help
`,
};

const isHelp = (args: string[]) => args.includes('--help') || args.includes('-h');

/** --config, else VIGIL_CONFIG, else /etc/vigil/server.toml when it exists (so CLI commands see what the unit uses). */
export function configFile(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (flag) return flag;
  if (env.VIGIL_CONFIG) return env.VIGIL_CONFIG;
  return existsSync('/etc/vigil/server.toml') ? '/etc/vigil/server.toml' : undefined;
}

const parse = parseCommandLine;

const daemonUrl = (config: ReturnType<typeof loadConfig>['config']) => {
  const host = ['0.0.0.0', '::', ''].includes(config.server.host) ? '127.0.0.1' : config.server.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.server.port}`;
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command && HELP[command] && isHelp(rest)) {
    process.stdout.write(HELP[command]);
    return 0;
  }
  switch (command) {
    case 'serve': {
      const { values, positionals } = parse('serve', {
        args: rest,
        allowPositionals: true,
        options: { config: { type: 'string', short: 'c' } },
      });
      if (positionals.length)
        throw Errors.usageError(`unexpected argument "${positionals[0]}" (see vigil serve --help)`);
      const { runServeCommand } = await import('./serve.js');
      return runServeCommand({ config: configFile(values.config) });
    }
    case 'models':
    case 'addons': {
      if (isHelp(rest)) {
        if (command === 'addons') return (await import('./addons.js')).runAddonsCommand(['--help']);
        return (await import('./models.js')).runModelsCommand(['--help']);
      }
      // The models dir, catalog and auto_download come from server.toml, so installs fill what `serve` reads.
      const configIndex = rest.findIndex((a) => a === '--config' || a === '-c');
      const configPath = configFile(configIndex >= 0 ? rest[configIndex + 1] : undefined);
      const args = configIndex >= 0 ? rest.filter((_, i) => i !== configIndex && i !== configIndex + 1) : rest;
      const { config, file } = loadConfig(configPath);
      const options = {
        defaultModelsDir: config.server.models_dir,
        configFile: file ? resolve(file) : null,
        autoDownload: config.addons.auto_download,
        catalog: config.server.model_catalog,
      };
      if (command === 'addons') return (await import('./addons.js')).runAddonsCommand(args, undefined, options);
      return (await import('./models.js')).runModelsCommand(args, undefined, options);
    }
    case 'workspaces':
    case 'keys': {
      const { runWorkspacesCommand } = await import('./workspaces.js');
      const hasConfig = rest.includes('--config') || rest.includes('-c');
      const file = hasConfig || isHelp(rest) ? undefined : configFile(undefined);
      return runWorkspacesCommand(command, file ? [...rest, '--config', file] : rest);
    }
    case 'backup':
    case 'restore': {
      const { runBackupCommand } = await import('./backup.js');
      return runBackupCommand(command, rest, configFile(undefined));
    }
    case 'kiosk': {
      const { runKioskCommand } = await import('./kiosk.js');
      return runKioskCommand(rest, configFile(undefined));
    }
    case 'users': {
      const { runUsersCommand } = await import('./users.js');
      return runUsersCommand(rest, configFile(undefined));
    }
    case 'config': {
      const { runConfigCommand } = await import('./config.js');
      return runConfigCommand(rest, configFile(undefined));
    }
    case 'monitors':
    case 'collections': {
      // Through the running daemon's API, with the admin key (as `vigil gallery`).
      const target = (flag?: string) => ({
        url: daemonUrl(loadConfig(configFile(flag)).config),
        key: process.env.VIGIL_API_KEY ?? null,
      });
      const cli = await import('./monitorsCli.js');
      return command === 'monitors' ? cli.runMonitorsCommand(rest, target) : cli.runCollectionsCommand(rest, target);
    }
    case 'gallery': {
      const { values, positionals } = parse('gallery', {
        args: rest,
        allowPositionals: true,
        options: {
          config: { type: 'string', short: 'c' },
          url: { type: 'string' },
          contract: { type: 'string' },
          'batch-size': { type: 'string', default: '1000' },
          'on-conflict': { type: 'string', default: 'error' },
        },
      });
      if (positionals[0] === 'export' && positionals.length === 3) {
        const { config } = loadConfig(configFile(values.config));
        const { runGalleryExport } = await import('./gallery.js');
        return runGalleryExport({
          url: values.url ?? daemonUrl(config),
          key: process.env.VIGIL_API_KEY ?? null,
          collection: positionals[1]!,
          file: positionals[2]!,
        });
      }
      if (positionals[0] !== 'import' || positionals.length !== 3) {
        process.stderr.write(HELP.gallery!);
        return EXIT.usage;
      }
      const batchSize = Number(values['batch-size']);
      if (!Number.isInteger(batchSize) || batchSize < 1)
        throw Errors.usageError(`--batch-size must be a positive integer (got "${values['batch-size']}")`);
      const onConflict = values['on-conflict'];
      if (onConflict !== 'error' && onConflict !== 'skip')
        throw Errors.usageError(`--on-conflict must be error or skip (got "${onConflict}")`);
      const { config } = loadConfig(configFile(values.config));
      const { runGalleryImport } = await import('./gallery.js');
      return runGalleryImport({
        url: values.url ?? daemonUrl(config),
        key: process.env.VIGIL_API_KEY ?? null,
        collection: positionals[1]!,
        file: positionals[2]!,
        contractId: values.contract ?? null,
        batchSize,
        onConflict,
      });
    }
    case 'store':
      if (rest[0] === 'compact') return (await import('./compact.js')).runCompactCommand(rest.slice(1));
      return (await import('./store.js')).runStoreCommand(rest);
    case 'doctor': {
      const { values } = parse('doctor', {
        args: rest,
        options: { config: { type: 'string', short: 'c' }, json: { type: 'boolean' } },
      });
      const { runDoctorCommand } = await import('./doctor.js');
      return runDoctorCommand(values.json ? ['--json'] : [], configFile(values.config));
    }
    case 'mcp': {
      const { values } = parse('mcp', {
        args: rest,
        options: {
          config: { type: 'string', short: 'c' },
          workspace: { type: 'string', short: 'w' },
          url: { type: 'string' },
        },
      });
      const key = process.env.VIGIL_WORKSPACE_KEY;
      if (!values.workspace || !key) {
        process.stderr.write(HELP.mcp!);
        return EXIT.usage;
      }
      const { config } = loadConfig(configFile(values.config));
      const { runMcpStdio } = await import('../mcp/stdio.js');
      return runMcpStdio({
        url: values.url ?? daemonUrl(config),
        workspaceId: values.workspace,
        key,
        style: config.scrapers.mcp_tool_names,
      });
    }
    case '--version':
    case '-v':
    case 'version':
      process.stdout.write(`vigil ${VERSION} (commit ${buildCommit()})\n`);
      return EXIT.ok;
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(USAGE);
      return command ? EXIT.ok : EXIT.usage;
    default:
      process.stderr.write(`vigil: unknown command "${command}"\n${USAGE}`);
      return EXIT.usage;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    // One line, never a stack (VIGIL_DEBUG=1 prints it for a bug report).
    const line = isVigilError(e) ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e);
    process.stderr.write(`vigil: error: ${line}\n`);
    if (process.env.VIGIL_DEBUG && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
    process.exit(exitCodeFor(e));
  },
);
