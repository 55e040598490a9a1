/**
 * `vigil models list|info|install|verify`. Results go to stdout, progress and licence notices to
 * stderr; every failure is one `vigil models: error: <code>: <message>` line and exit code 2.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Errors, isVigilError } from '../contract/errors.js';
import type { Catalog } from '../models/catalog.js';
import { formatBytes } from '../models/fsutil.js';
import { describeProblems } from '../models/installed.js';
import {
  installedPackIds,
  installPack,
  listPacks,
  packInfo,
  verifyPack,
  type FileOutcome,
  type InstallResult,
  type PackInfo,
  type PackListing,
} from '../models/installer.js';
import type { InStream, OutStream } from '../models/license.js';
import { configFileProblem, replaceConfig, withAddonEnabled } from '../addons/configEnablement.js';
import { installLiveness, LIVENESS } from '../addons/livenessFiles.js';
import { tryLockFile } from '../system/lockFile.js';

export interface ModelsCommandIo {
  stdout: OutStream;
  stderr: OutStream;
  stdin: InStream;
}

export interface ModelsCommandOptions {
  /** The models dir from the config file; used when neither --models-dir nor VIGIL_MODELS_DIR is set. */
  defaultModelsDir?: string;
  /** The config file in use (where --enable-liveness saves the setting), or null. */
  configFile?: string | null;
  /** [addons].auto_download: installed with every pack, even when the pack is already cached. */
  autoDownload?: string[];
  env?: NodeJS.ProcessEnv;
  /** A catalog (or path) other than the bundled manifest; for tests and packaging. */
  catalog?: Catalog | string;
}

export const FALLBACK_MODELS_DIR = '/var/lib/vigil/models';

const USAGE = `Usage: vigil models <command> [options]

Commands:
  list                     every pack in the catalog and whether it is installed
  info <pack>              a pack's files, checksums, sources and licences
  install <pack>           download, verify and install a pack
  verify [pack]            re-hash an installed pack (all installed packs when omitted)

Options:
  --accept-license         accept the pack's licence terms (required unless answered on a terminal)
  --from DIR|URL           try this flat mirror (folder or http(s) base URL) before the catalog sources
                           (default: env VIGIL_MODEL_MIRROR)
  --models-dir DIR         where packs are installed (default: env VIGIL_MODELS_DIR, the config file,
                           then ${FALLBACK_MODELS_DIR})
  --force                  fetch every file again even if the installed copy verifies
  --enable-liveness        also install the liveness addon and enable it in the config file (install only;
                           a running daemon needs a restart)
  -h, --help               show this help
`;

const OPTIONS = {
  'accept-license': { type: 'boolean' },
  from: { type: 'string' },
  'models-dir': { type: 'string' },
  force: { type: 'boolean' },
  'enable-liveness': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type ParsedOptions = {
  'accept-license'?: boolean;
  from?: string;
  'models-dir'?: string;
  force?: boolean;
  'enable-liveness'?: boolean;
  help?: boolean;
};

/** Which options each command takes; anything else is a usage error rather than silently ignored. */
const ALLOWED: Record<string, (keyof ParsedOptions)[]> = {
  list: ['models-dir'],
  info: ['models-dir'],
  install: ['accept-license', 'from', 'models-dir', 'force', 'enable-liveness'],
  verify: ['models-dir'],
};

const usage = (message: string) => Errors.usageError(`${message} (see vigil models --help)`);

export async function runModelsCommand(
  argv: string[],
  io: ModelsCommandIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  options: ModelsCommandOptions = {},
): Promise<number> {
  try {
    const { values, positionals } = parseCommandLine(argv);
    if (values.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    const [command, ...rest] = positionals;
    if (command === undefined) throw usage('missing command');
    const allowed = ALLOWED[command];
    if (!allowed) throw usage(`unknown command "${command}"`);
    const stray = (Object.keys(values) as (keyof ParsedOptions)[]).find((k) => !allowed.includes(k));
    if (stray) throw usage(`--${stray} does not apply to "${command}"`);
    const ctx: CommandContext = {
      io,
      values,
      env: options.env ?? process.env,
      catalog: options.catalog,
      modelsDir: resolveModelsDir(values['models-dir'], options),
      configFile: options.configFile ?? null,
      autoDownload: options.autoDownload ?? [],
    };
    return await dispatch(command, rest, ctx);
  } catch (err) {
    printError(io.stderr, err);
    return 2;
  }
}

interface CommandContext {
  io: ModelsCommandIo;
  values: ParsedOptions;
  env: NodeJS.ProcessEnv;
  catalog: Catalog | string | undefined;
  modelsDir: string;
  configFile: string | null;
  autoDownload: string[];
}

function parseCommandLine(argv: string[]): { values: ParsedOptions; positionals: string[] } {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw usage((err as Error).message);
  }
}

export function resolveModelsDir(flag: string | undefined, options: ModelsCommandOptions): string {
  const env = options.env ?? process.env;
  return resolve(flag || env.VIGIL_MODELS_DIR || options.defaultModelsDir || FALLBACK_MODELS_DIR);
}

async function dispatch(command: string, args: string[], ctx: CommandContext): Promise<number> {
  const maxArgs = command === 'list' ? 0 : 1;
  if (args.length > maxArgs) throw usage(`unexpected argument "${args[maxArgs]}"`);
  const pack = args[0];
  switch (command) {
    case 'list':
      return runList(ctx);
    case 'info':
      if (pack === undefined) throw usage('info needs a pack name');
      return runInfo(pack, ctx);
    case 'install':
      if (pack === undefined) throw usage('install needs a pack name');
      return runInstall(pack, ctx);
    default:
      return runVerify(pack, ctx);
  }
}

async function runList(ctx: CommandContext): Promise<number> {
  const packs = await listPacks({ modelsDir: ctx.modelsDir, catalog: ctx.catalog });
  ctx.io.stdout.write(formatList(packs, ctx.modelsDir));
  return 0;
}

function formatList(packs: PackListing[], modelsDir: string): string {
  const rows = [
    ['PACK', 'STATUS', 'DETECTOR', 'RECOGNIZER', 'COMMERCIAL'],
    ...packs.map((p) => [
      p.is_default ? `${p.id} *` : p.id,
      p.status,
      p.detector,
      p.recognizer,
      p.commercial_use ? 'yes' : 'no',
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) =>
    r
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
  for (const p of packs.filter((x) => x.problems.length > 0)) lines.push(`${p.id}: ${describeProblems(p.problems)}`);
  lines.push('', `* default pack; models dir: ${modelsDir}`);
  return `${lines.join('\n')}\n`;
}

async function runInfo(packId: string, ctx: CommandContext): Promise<number> {
  const info = await packInfo({ packId, modelsDir: ctx.modelsDir, catalog: ctx.catalog, env: ctx.env });
  ctx.io.stdout.write(formatInfo(info, ctx.modelsDir));
  return 0;
}

function formatInfo(info: PackInfo, modelsDir: string): string {
  const d = info.detector;
  const r = info.recognizer;
  const lines = [
    `pack ${info.id}${info.is_default ? ' (default)' : ''}: ${info.description}`,
    `status: ${info.status ?? 'unknown'} (models dir ${modelsDir})`,
    `detector: ${d.file} (${d.kind}, ${d.channel_order}, mean ${d.mean}, std ${d.std}, ${d.preprocessing_version})`,
    `recognizer: ${r.file} (${r.kind}, ${r.input_size.join('x')}, ${r.channel_order}, mean ${r.mean}, std ${r.std}, ` +
      `${r.embedding_dimension}-d, ${r.preprocessing_version})`,
    'files:',
  ];
  for (const f of info.files) {
    lines.push(
      `  ${f.name} [${f.roles.join(', ')}]`,
      `    sha256:  ${f.sha256}`,
      `    size:    ${f.size} bytes (${formatBytes(f.size)})`,
      `    licence: ${f.license}`,
      '    sources:',
      ...(f.sources.length > 0
        ? f.sources.map((s, i) => `      ${i + 1}. ${s}`)
        : ['      (none: install from a mirror with --from)']),
    );
  }
  lines.push('licences:');
  for (const l of info.licenses) {
    lines.push(
      `  ${l.id}: ${l.name}`,
      `    url: ${l.url}`,
      `    commercial use: ${l.commercial_use ? 'yes' : 'no'}`,
      `    ${l.notice}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

async function runInstall(packId: string, ctx: CommandContext): Promise<number> {
  const enable = ctx.values['enable-liveness'] === true;
  // --enable-liveness: the config must be editable before anything is downloaded, and stays locked.
  let enabling: { file: string; text: string; release: () => void } | null = null;
  if (enable) {
    const problem = await configFileProblem(ctx.configFile);
    if (problem) throw problem;
    const file = ctx.configFile!;
    const lock = tryLockFile(join(dirname(file), '.liveness-management.lock'));
    if (!('release' in lock))
      throw Errors.addonJobInProgress(
        `another process (pid ${lock.heldBy}) is changing the liveness setting`,
        lock.heldBy,
      );
    enabling = { file, text: await readFile(file, 'utf8'), release: lock.release };
  }
  try {
    return await installWithAddons(packId, ctx, enabling);
  } finally {
    enabling?.release();
  }
}

async function installWithAddons(
  packId: string,
  ctx: CommandContext,
  enabling: { file: string; text: string } | null,
): Promise<number> {
  const result = await installPack({
    packId,
    modelsDir: ctx.modelsDir,
    catalog: ctx.catalog,
    mirror: ctx.values.from,
    acceptLicense: ctx.values['accept-license'] === true,
    force: ctx.values.force === true,
    env: ctx.env,
    io: ctx.io,
  });
  ctx.io.stdout.write(formatInstall(result));
  if (enabling || ctx.autoDownload.includes(LIVENESS)) {
    const addon = await installLiveness({
      catalog: ctx.catalog,
      modelsDir: ctx.modelsDir,
      mirror: ctx.values.from,
      env: ctx.env,
      stderr: ctx.io.stderr,
    });
    ctx.io.stdout.write(formatAddon(addon));
  }
  if (enabling) {
    try {
      await replaceConfig(enabling.file, enabling.text, withAddonEnabled(enabling.text, LIVENESS), () => false);
    } catch (e) {
      throw Errors.addonConfigSaveFailed(`Configuration enablement has not been confirmed (${(e as Error).message})`);
    }
    ctx.io.stdout.write(`liveness enabled in ${enabling.file}; restart a running daemon to use it\n`);
  }
  return 0;
}

export function formatAddon(r: { dir: string; files: FileOutcome[] }): string {
  const lines = r.files.map((f) =>
    f.status === 'cached' ? `${f.name}: cached` : `${f.name}: ${f.status} from ${f.source}`,
  );
  lines.push(`liveness addon verified in ${r.dir}`);
  return `${lines.join('\n')}\n`;
}

function formatInstall(result: InstallResult): string {
  const lines = result.files.map((f) =>
    f.status === 'cached' ? `${f.name}: cached` : `${f.name}: ${f.status} from ${f.source}`,
  );
  lines.push(`installed pack ${result.pack_id} in ${result.dir}`);
  return `${lines.join('\n')}\n`;
}

async function runVerify(packId: string | undefined, ctx: CommandContext): Promise<number> {
  const ids =
    packId !== undefined ? [packId] : await installedPackIds({ modelsDir: ctx.modelsDir, catalog: ctx.catalog });
  if (ids.length === 0) {
    throw Errors.modelNotInstalled(null, ctx.modelsDir);
  }
  let failed = 0;
  for (const id of ids) {
    try {
      const result = await verifyPack({ packId: id, modelsDir: ctx.modelsDir, catalog: ctx.catalog });
      ctx.io.stdout.write(`${id}: ok (${result.files.map((f) => f.name).join(', ')} verified in ${result.dir})\n`);
    } catch (err) {
      failed += 1;
      printError(ctx.io.stderr, err);
    }
  }
  return failed > 0 ? 2 : 0;
}

export function printError(stderr: OutStream, err: unknown): void {
  if (isVigilError(err)) {
    stderr.write(`vigil models: error: ${err.code}: ${err.message}\n`);
  } else {
    stderr.write(`vigil models: error: internal_error: ${(err as Error)?.message ?? String(err)}\n`);
  }
}
