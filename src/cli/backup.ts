import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import {
  createReadStream,
  existsSync,
  linkSync,
  chmodSync,
  copyFileSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import Database from 'better-sqlite3';
import * as tar from 'tar';
import { loadConfig } from '../config/load.js';
import { Errors, isVigilError } from '../contract/errors.js';
import { buildCommit, VERSION } from '../contract/version.js';
import { BOX_KEY_FILE } from '../store/credentialCipher.js';
import { acquireDataDirLock, LOCK_FILE } from '../store/dataDirLock.js';
import { appliedSchemaVersion, knownSchemaVersion, schemaTooNew } from '../store/database.js';
import { storeDatabase } from '../store/postgres.js';
import { isProcessAlive } from '../system/processes.js';
import type { CliIo } from './workspaces.js';

/**
 * `vigil backup FILE` and `vigil restore FILE`. A backup is one tar.gz: `vigil.db` taken with SQLite's
 * online backup API (consistent while the daemon writes), the key files (cursor signing, monitor
 * credentials), the event snapshots, and `manifest.json` with every file's size and SHA-256. Face crops
 * and embeddings live in SQLite. Search indexes are left out: they are rebuilt from SQLite.
 */
export const BACKUP_FORMAT = 'vigil-backup-1';
const DB = 'vigil.db';
const KEY_FILES = ['cursor.key', BOX_KEY_FILE];
const TREES = ['events'];

/**
 * What the archive holds of the gallery: a single box's database is the whole of it (`full`); a fleet box's
 * is its replica of the fleet's PostgreSQL database (`local_replica`), which pg_dump backs up.
 */
export type BackupStore =
  | { kind: 'sqlite'; scope: 'full' }
  | { kind: 'postgres'; scope: 'local_replica'; /** host:port/database */ database: string };

export interface Manifest {
  format: string;
  vigil_version: string;
  /** The build's git commit (archives of versions before 0.3 lack it). */
  vigil_commit?: string;
  /** The database's highest migration (archives of versions before 0.3 lack it; restore reads the file's). */
  schema_version?: number;
  created_at: string;
  source_data_dir: string;
  counts: Record<string, number>;
  /** Archives of earlier versions lack it (they are `sqlite`/`full`, or a fleet box's replica without saying so). */
  store?: BackupStore;
  /** `mode`: the file's permission bits in the source data dir, octal ("0600"); archives of older versions lack it. */
  files: { path: string; bytes: number; sha256: string; mode?: string }[];
}

/** Every file of a data dir holds keys or faces: restored files without a recorded mode get this one. */
const PRIVATE_FILE = 0o600;
const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

function sha256File(path: string): Promise<string> {
  return new Promise((res, rej) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (c) => h.update(c))
      .on('error', rej)
      .on('end', () => res(h.digest('hex')));
  });
}

function walk(dir: string, base: string, out: string[]): void {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return; // removed meanwhile (retention)
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, base, out);
    else if (e.isFile()) out.push(relative(base, p));
  }
}

/**
 * The staging folders of a backup or restore in the data dir: `<prefix><pid>-<ms>`. A backup holds a full
 * copy of the database there until its archive is written; one killed mid-way leaves it behind.
 */
const BACKUP_STAGING = '.backup-staging-';
const RESTORE_STAGING = '.restore-';
/** Earlier versions named the backup's folder `.backup-<pid>-<ms>`. */
const STAGING = /^(?:\.backup-staging-|\.backup-|\.restore-)(\d+)-\d+$/;

/**
 * Removes the staging folders of backups and restores whose process is gone (killed mid-way: each can hold a
 * copy of the whole database). Run at the daemon's start and before each backup; a folder of a backup still
 * running (its pid alive) is left alone. Returns what was removed.
 */
export function removeStaleStaging(dataDir: string, log: (s: string) => void = () => undefined): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dataDir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const pid = STAGING.exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid || isProcessAlive(Number(pid))) continue;
    rmSync(join(dataDir, name), { recursive: true, force: true });
    removed.push(name);
    log(`removed ${join(dataDir, name)}, left by a backup or restore that did not finish\n`);
  }
  return removed;
}

/** What the restored box must show again (the round-trip test compares these). */
export function databaseCounts(db: Database.Database): Record<string, number> {
  const count = (table: string) => {
    try {
      return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    } catch {
      return 0;
    }
  };
  return {
    collections: count('collections'),
    persons: count('persons'),
    faces: count('face_samples'),
    monitors: count('monitors'),
    events: count('events'),
    webhooks: count('webhook_endpoints'),
    workspaces: count('workspaces'),
    kiosk_tokens: count('kiosk_tokens'),
  };
}

export async function createBackup(
  dataDir: string,
  file: string,
  log: (s: string) => void = () => undefined,
  store: BackupStore = { kind: 'sqlite', scope: 'full' },
  /** Include the event clips (MP4 beside the snapshots): off by default, they are most of the bytes. */
  opts: { clips?: boolean } = {},
): Promise<Manifest> {
  const dbPath = join(dataDir, DB);
  if (!existsSync(dbPath)) throw Errors.dataDirUnusable(dataDir, `there is no ${DB} to back up`);
  // Staging inside the data dir, so snapshot files are hard links (instant, and immune to retention deleting them meanwhile).
  removeStaleStaging(dataDir, log);
  const stage = join(dataDir, `${BACKUP_STAGING}${process.pid}-${Date.now()}`);
  mkdirSync(stage, { mode: 0o700 });
  try {
    const src = new Database(dbPath, { readonly: true, fileMustExist: true });
    src.pragma('busy_timeout = 15000');
    let counts: Record<string, number>;
    let schemaVersion: number;
    try {
      await src.backup(join(stage, DB));
    } finally {
      src.close();
    }
    // SQLite creates the copy with its default mode; the archive records the source's.
    chmodSync(join(stage, DB), statSync(dbPath).mode & 0o777);
    const copy = new Database(join(stage, DB), { readonly: true });
    try {
      counts = databaseCounts(copy);
      schemaVersion = appliedSchemaVersion(copy) ?? 0;
    } finally {
      copy.close();
    }
    const rel: string[] = [DB];
    for (const k of KEY_FILES) if (existsSync(join(dataDir, k))) rel.push(k);
    let clipsLeft = 0,
      clipBytesLeft = 0;
    for (const t of TREES) {
      const found: string[] = [];
      walk(join(dataDir, t), dataDir, found);
      for (const f of found) {
        if (!opts.clips && f.endsWith('.mp4')) {
          clipsLeft++;
          clipBytesLeft += statSync(join(dataDir, f), { throwIfNoEntry: false })?.size ?? 0;
        } else rel.push(f);
      }
    }
    for (const r of rel.slice(1)) {
      mkdirSync(dirname(join(stage, r)), { recursive: true });
      try {
        linkSync(join(dataDir, r), join(stage, r));
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') continue; // deleted by retention between the listing and now
        copyFileSync(join(dataDir, r), join(stage, r));
      }
    }
    const present = rel.filter((r) => existsSync(join(stage, r)));
    const files = [];
    for (const r of present) {
      const st = statSync(join(stage, r));
      files.push({
        path: r.split(sep).join('/'),
        bytes: st.size,
        sha256: await sha256File(join(stage, r)),
        mode: octal(st.mode),
      });
    }
    const manifest: Manifest = {
      format: BACKUP_FORMAT,
      vigil_version: VERSION,
      vigil_commit: buildCommit(),
      schema_version: schemaVersion,
      created_at: new Date().toISOString(),
      source_data_dir: resolve(dataDir),
      counts,
      store,
      files,
    };
    writeFileSync(join(stage, 'manifest.json'), JSON.stringify(manifest, null, 2));
    // The archive holds the keys and every face: 0600 whatever the umask (a leftover .partial is made anew).
    const tmp = `${file}.partial`;
    rmSync(tmp, { force: true });
    await tar.c({ gzip: true, file: tmp, cwd: stage, portable: true, mode: PRIVATE_FILE }, [
      'manifest.json',
      ...present,
    ]);
    chmodSync(tmp, PRIVATE_FILE);
    renameSync(tmp, file);
    log(
      `backup ${file}: ${files.length} files, ${Object.entries(counts)
        .map(([k, v]) => `${v} ${k}`)
        .join(', ')}\n`,
    );
    if (clipsLeft)
      log(`left out ${clipsLeft} event clips (${(clipBytesLeft / 1024 ** 2).toFixed(1)} MiB): --clips includes them\n`);
    if (store.kind === 'postgres') log(`${fleetNote(store.database)}\n`);
    return manifest;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

/** What a fleet box's archive leaves out (vigil backup says it after the archive is written). */
const fleetNote = (database: string) =>
  `fleet box: the archive holds this box's local replica of the gallery (with its monitors, event pictures and keys), not the fleet's PostgreSQL database ${database}: back that up with pg_dump (docs/operations/backup-restore.md)`;

/** The manifest's store of a box with this configuration. */
export function backupStore(store: { backend: 'sqlite' | 'postgres'; url?: string | undefined }): BackupStore {
  return store.backend === 'postgres' && store.url
    ? { kind: 'postgres', scope: 'local_replica', database: storeDatabase(store.url) }
    : { kind: 'sqlite', scope: 'full' };
}

/** Extracts and verifies an archive into `dir` (every file against the manifest, the database's integrity). */
export async function verifyBackup(file: string, dir: string): Promise<Manifest> {
  const bad = (why: string) => Errors.backupInvalid(file, why);
  if (!existsSync(file)) throw bad('the file does not exist');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    await tar.x({ file, cwd: dir, strict: true, preservePaths: false });
  } catch (e) {
    throw bad(`the archive cannot be read (${(e as Error).message})`);
  }
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  } catch {
    throw bad('manifest.json is missing or not JSON');
  }
  if (manifest.format !== BACKUP_FORMAT) throw bad(`unknown format "${String(manifest.format)}"`);
  for (const f of manifest.files) {
    const p = join(dir, f.path);
    if (!resolve(p).startsWith(resolve(dir) + sep)) throw bad(`a path leaves the archive (${f.path})`);
    if (!existsSync(p)) throw bad(`${f.path} is missing`);
    if (f.mode !== undefined && !/^0[0-7]{3}$/.test(f.mode)) throw bad(`${f.path} has an invalid mode "${f.mode}"`);
    if (statSync(p).size !== f.bytes || (await sha256File(p)) !== f.sha256)
      throw bad(`${f.path} fails its SHA-256 checksum`);
  }
  const extracted: string[] = [];
  walk(dir, dir, extracted);
  const listed = new Set(['manifest.json', ...manifest.files.map((f) => f.path)]);
  const extra = extracted.map((p) => p.split(sep).join('/')).filter((p) => !listed.has(p));
  if (extra.length) throw bad(`files not in the manifest: ${extra.slice(0, 3).join(', ')}`);
  const db = new Database(join(dir, DB), { readonly: true });
  try {
    const check = (db.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check);
    if (check.join() !== 'ok') throw bad(`the database fails integrity_check (${check.slice(0, 2).join('; ')})`);
    const counts = databaseCounts(db);
    if (JSON.stringify(counts) !== JSON.stringify(manifest.counts))
      throw bad('the database does not hold the counts in the manifest');
    // A newer build's backup: this build would refuse the restored data dir at start (nothing is moved).
    const refusal = schemaTooNew(`The backup ${file}`, appliedSchemaVersion(db), knownSchemaVersion());
    if (refusal) throw refusal;
  } finally {
    db.close();
  }
  return manifest;
}

/**
 * Restores into a stopped box: verifies everything first (in a staging folder inside the data dir), then
 * moves the current contents aside (only with `force`) and the verified files in. Search indexes are
 * rebuilt by the daemon at its next start.
 */
export async function restoreBackup(
  dataDir: string,
  file: string,
  opts: { force?: boolean; log?: (s: string) => void } = {},
): Promise<Manifest> {
  const log = opts.log ?? (() => undefined);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const release = lockForRestore(dataDir);
  removeStaleStaging(dataDir, log);
  const stage = join(dataDir, `${RESTORE_STAGING}${process.pid}-${Date.now()}`);
  try {
    const manifest = await verifyBackup(file, stage);
    const current = readdirSync(dataDir).filter(
      (n) =>
        n !== LOCK_FILE &&
        n !== `${LOCK_FILE}.pid` &&
        n !== `${DB}.lock` &&
        !n.startsWith(RESTORE_STAGING) &&
        !n.startsWith('.before-restore-'),
    );
    if (current.length && !opts.force) {
      throw Errors.restoreTargetInUse(
        `${dataDir} is not empty (${current.slice(0, 4).join(', ')}${current.length > 4 ? ', …' : ''}): restore into an empty data dir, or pass --force to move its contents to ${dataDir}/.before-restore-<time>/`,
      );
    }
    if (current.length) {
      const aside = join(dataDir, `.before-restore-${new Date().toISOString().replace(/[:.]/g, '-')}`);
      mkdirSync(aside, { mode: 0o700 });
      for (const n of current) renameSync(join(dataDir, n), join(aside, n));
      log(`moved the previous contents to ${aside}\n`);
    }
    for (const f of manifest.files) {
      mkdirSync(dirname(join(dataDir, f.path)), { recursive: true, mode: 0o700 });
      renameSync(join(stage, f.path), join(dataDir, f.path));
      // As in the source (extraction applied the umask); private when the archive recorded no mode.
      chmodSync(join(dataDir, f.path), f.mode === undefined ? PRIVATE_FILE : parseInt(f.mode, 8));
    }
    log(
      `restored ${file} (taken ${manifest.created_at}, vigil ${manifest.vigil_version}): ${manifest.files.length} files verified, ${Object.entries(
        manifest.counts,
      )
        .map(([k, v]) => `${v} ${k}`)
        .join(', ')}\n`,
    );
    if (manifest.store?.kind === 'postgres')
      log(
        `fleet box: the restored gallery is a replica of ${manifest.store.database}; at its start the box catches up from PostgreSQL (restore that database itself with pg_restore, docs/operations/backup-restore.md)\n`,
      );
    return manifest;
  } finally {
    rmSync(stage, { recursive: true, force: true });
    release();
  }
}

/**
 * Takes the kernel lock a daemon holds on its data dir for the whole restore (acquireDataDirLock), so no
 * daemon can be running under it and none can start while files move; refused with data_dir_locked
 * (exit 15) whenever one holds it, --force included.
 */
function lockForRestore(dataDir: string): () => void {
  try {
    return acquireDataDirLock(dataDir);
  } catch (e) {
    if (!isVigilError(e) || e.code !== 'data_dir_locked') throw e;
    const pid = (e.details as { pid?: number } | undefined)?.pid ?? null;
    throw Errors.dataDirLocked(
      `A Vigil daemon${pid === null ? '' : ` (pid ${pid})`} is running on ${dataDir}: stop it first (systemctl stop vigil). Restore never replaces the files of a running daemon, with or without --force.`,
      pid,
    );
  }
}

export const BACKUP_USAGE = `Usage:
  vigil backup FILE.tar.gz [--config FILE] [--clips]   while the daemon runs: SQLite online backup + key files
                                                       + event snapshots, with manifest.json and SHA-256 per file
                                                       (--clips: the event clips too; left out by default, with
                                                       their count and size printed)
  vigil restore FILE.tar.gz [--config FILE] [--force]  on a stopped box: verifies every checksum and the database,
                                                       then restores into [server] data_dir (--force moves what is
                                                       there to <data_dir>/.before-restore-<time>/)
`;

export async function runBackupCommand(
  command: 'backup' | 'restore',
  argv: string[],
  configFile: string | undefined,
  io: CliIo = process,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: 'string', short: 'c' },
        force: { type: 'boolean' },
        clips: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    throw Errors.usageError(`${(e as Error).message.split('. To specify')[0]} (see vigil ${command} --help)`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout.write(BACKUP_USAGE);
    return 0;
  }
  if (positionals.length !== 1)
    throw Errors.usageError(`usage: vigil ${command} FILE.tar.gz (see vigil ${command} --help)`);
  if (command === 'backup' && values.force) throw Errors.usageError('--force applies to restore only');
  if (command === 'restore' && values.clips) throw Errors.usageError('--clips applies to backup only');
  const { config } = loadConfig(values.config ?? configFile);
  const log = (s: string) => io.stdout.write(s);
  if (command === 'backup')
    await createBackup(config.server.data_dir, positionals[0]!, log, backupStore(config.store), {
      clips: values.clips,
    });
  else await restoreBackup(config.server.data_dir, positionals[0]!, { force: values.force, log });
  return 0;
}
