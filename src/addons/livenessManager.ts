/**
 * GET /v1/addons/liveness and the "download and enable after restart" job behind
 * POST /v1/addons/liveness/enable. One job at a time, shared by every caller; it runs to completion
 * even if the client that started it goes away. The running inference never changes: the new setting
 * takes effect at the next start.
 */
import { constants } from 'node:fs';
import { access, readFile, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { type ApiError, Errors, isApiError } from '../contract/errors.js';
import type { Catalog } from '../models/catalog.js';
import { tryLockFile } from '../system/lockFile.js';
import { configFileProblem, configuredAddons, replaceConfig, withAddonEnabled } from './configEnablement.js';
import { inspectLiveness, installLiveness, LIVENESS } from './livenessFiles.js';

export interface LivenessManagerOptions {
  catalog: Catalog;
  modelsDir: string;
  configFile: string | null;
  /** Liveness is active in this process. */
  enabled: boolean;
  /** Mirror tried before the catalog's pinned URLs ([addons].mirror or VIGIL_MODEL_MIRROR). */
  mirror?: string;
  env?: NodeJS.ProcessEnv;
  log: Logger;
}

export interface LivenessStatus {
  enabled: boolean;
  installed: boolean;
  configured_enabled: boolean;
  restart_required: boolean;
  can_enable: boolean;
  unavailable_code: string | null;
  unavailable_reason: string | null;
  state: 'idle' | 'downloading' | 'ready' | 'error';
  error: { code: string; message: string } | null;
  model_path: string;
  config_file: string | null;
}

/** Public messages: fixed texts, never an exception's text (a proxy URL with credentials could be in it). */
const JOB_MESSAGES: Record<string, string> = {
  addon_download_failed:
    'Downloading the liveness models failed (no source had a copy that verifies). The configuration was not changed; check the mirror or network and retry.',
  addon_config_save_failed:
    'The liveness models are ready, but saving the configuration failed. The configuration was not changed; retry.',
  addon_job_in_progress: 'Another process is already preparing the liveness addon; retry when it has finished.',
};

/** The nearest existing ancestor of `path` is writable (so the directory can be created). */
async function creatable(path: string): Promise<boolean> {
  let p = resolve(path);
  for (;;) {
    const info = await stat(p).catch(() => null);
    if (info)
      return (
        info.isDirectory() &&
        (await access(p, constants.W_OK).then(
          () => true,
          () => false,
        ))
      );
    const parent = dirname(p);
    if (parent === p) return false;
    p = parent;
  }
}

export class LivenessManager {
  private job: Promise<void> | null = null;
  private lastError: { code: string; message: string } | null = null;
  private stopping = false;

  constructor(private readonly o: LivenessManagerOptions) {}

  get modelPath(): string {
    return join(this.o.modelsDir, 'addons', LIVENESS);
  }

  private async unavailable(installed: boolean, invalid: boolean): Promise<ApiError | null> {
    if (this.stopping) return Errors.serverStopping('liveness cannot be enabled now.');
    const config = await configFileProblem(this.o.configFile);
    if (config) return config;
    if (invalid)
      return Errors.addonModelInvalid(
        `A liveness model file in ${this.modelPath} does not verify; remove it so it can be downloaded again.`,
        { status: 409 },
      );
    if (!installed && !(await creatable(this.modelPath))) {
      return Errors.addonDirectoryNotWritable(`The service cannot write the liveness models to ${this.modelPath}.`);
    }
    return null;
  }

  async status(): Promise<LivenessStatus> {
    const files = await inspectLiveness(this.o.catalog, this.o.modelsDir);
    const configured = (await configuredAddons(this.o.configFile)).includes(LIVENESS);
    const problem = await this.unavailable(files.installed, files.invalid.length > 0);
    const state = this.job ? 'downloading' : this.lastError ? 'error' : files.installed ? 'ready' : 'idle';
    return {
      enabled: this.o.enabled,
      installed: files.installed,
      configured_enabled: configured,
      restart_required: configured !== this.o.enabled,
      can_enable: problem === null,
      unavailable_code: problem?.code ?? null,
      unavailable_reason: problem?.message ?? null,
      state,
      error: this.lastError,
      model_path: this.modelPath,
      config_file: this.o.configFile,
    };
  }

  /** Starts the job (or joins the running one) and returns the status right after; 409 when it cannot run. */
  async enable(): Promise<LivenessStatus> {
    if (!this.job) {
      const current = await this.status();
      if (!current.can_enable) {
        throw Errors.addonManagementUnavailable(current.unavailable_reason, {
          unavailable_code: current.unavailable_code,
        });
      }
      if (!this.job) {
        this.lastError = null;
        this.job = this.prepare()
          .catch((e: unknown) => {
            this.lastError = this.toJobError(e);
            this.o.log.warn({ code: this.lastError.code, err: e }, 'liveness enable job failed');
          })
          .finally(() => {
            this.job = null;
          });
      }
    }
    return this.status();
  }

  /** For tests and shutdown: resolves when no job runs. */
  async settled(): Promise<void> {
    await this.job;
  }

  /** Blocks any later config commit and waits (up to 10 s) for a running job. */
  async close(): Promise<void> {
    this.stopping = true;
    if (this.job) await Promise.race([this.job, new Promise((r) => setTimeout(r, 10_000).unref())]);
  }

  private toJobError(e: unknown): { code: string; message: string } {
    const code = isApiError(e) ? e.code : 'addon_config_save_failed';
    return { code, message: JOB_MESSAGES[code] ?? (isApiError(e) ? e.message : 'Enabling liveness failed.') };
  }

  private async prepare(): Promise<void> {
    const file = this.o.configFile!;
    const lock = tryLockFile(join(dirname(file), '.liveness-management.lock'));
    if (!('release' in lock)) throw Errors.addonJobInProgress(JOB_MESSAGES.addon_job_in_progress!);
    try {
      const files = await inspectLiveness(this.o.catalog, this.o.modelsDir);
      const problem = await this.unavailable(files.installed, files.invalid.length > 0);
      if (problem) throw problem;
      const text = await readFile(file, 'utf8');
      const next = withAddonEnabled(text, LIVENESS);
      if (!files.installed) {
        try {
          await installLiveness({
            catalog: this.o.catalog,
            modelsDir: this.o.modelsDir,
            mirror: this.o.mirror,
            env: this.o.env,
          });
        } catch (e) {
          if (isApiError(e) && (e.code === 'addon_model_invalid' || e.code === 'addon_job_in_progress')) throw e;
          this.o.log.warn({ err: e }, 'liveness model download failed');
          throw Errors.addonDownloadFailed(JOB_MESSAGES.addon_download_failed!);
        }
      }
      if (next === text) return;
      try {
        await replaceConfig(file, text, next, () => this.stopping);
      } catch (e) {
        if (isApiError(e) && (e.code === 'server_stopping' || e.code === 'addon_config_invalid')) throw e;
        this.o.log.warn({ err: e }, 'saving the liveness config failed');
        throw Errors.addonConfigSaveFailed(JOB_MESSAGES.addon_config_save_failed!);
      }
    } finally {
      lock.release();
    }
  }
}
