import { readFileSync, writeFileSync } from 'node:fs';
import type { CollectionT } from '../contract/collections.js';
import { Errors } from '../contract/errors.js';
import type { MonitorT } from '../contract/monitors.js';
import type { MonitorTestResultT } from '../contract/settings.js';
import { parseCommandLine } from './commandLine.js';
import { DaemonClient } from './daemonClient.js';
import type { CliIo } from './workspaces.js';

export const MONITORS_USAGE = `Usage:
  vigil monitors list                       the cameras: id, enabled, status, collection, source (no credentials)
  vigil monitors add ID --source RTSP_URL --collection COLLECTION [--name NAME] [--fps N] [--preview]
                    [--disabled] [--test]   a new camera; --test tries the connection first and adds it only
                                            if a frame was decoded; --source - reads the URL from stdin (keeps
                                            the password out of the shell history and ps)
  vigil monitors remove ID                  delete the camera (its events stay in the history)
  vigil monitors test (ID | --source RTSP_URL) [--pipeline ID|TEMPLATE] [--snapshot FILE.jpg] [--timeout S]
                                            probe, then decode one frame; exit 1 with the cause when it fails
  vigil monitors pipelines                  the decode pipelines ([monitors] pipeline) and which this box runs
Common: --url URL (the daemon; default from the config), --config FILE, --json, -h/--help
Through the running daemon's API (it encrypts the URL, starts the stream); the admin key in VIGIL_API_KEY.
`;

export const COLLECTIONS_USAGE = `Usage:
  vigil collections list                    id, name, persons, faces, threshold
  vigil collections create ID [--name NAME] [--threshold T] [--save-face-crops]
Common: --url URL (the daemon; default from the config), --config FILE, --json, -h/--help
Through the running daemon's API; the admin key in VIGIL_API_KEY.
`;

const common = {
  url: { type: 'string' },
  config: { type: 'string', short: 'c' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface DaemonTarget {
  /** The daemon's base URL from the config (overridden by --url). */
  url: string;
  key: string | null;
}

function numberOption(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw Errors.usageError(`--${name} must be a number (got "${v}")`);
  return n;
}

/** Prints a test result; true when a frame was decoded. */
function reportTest(io: CliIo, t: MonitorTestResultT, snapshot: string | undefined, json: boolean): boolean {
  if (t.ok && snapshot && t.snapshot) writeFileSync(snapshot, Buffer.from(t.snapshot.data_base64, 'base64'));
  if (json) {
    const { snapshot: s, ...rest } = t;
    io.stdout.write(`${JSON.stringify({ ...rest, snapshot: s ? (snapshot ?? true) : null }, null, 2)}\n`);
  } else if (t.ok)
    io.stdout.write(
      `ok: ${t.source}: ${t.message} in ${t.elapsed_ms} ms (pipeline ${t.pipeline})${snapshot ? `; snapshot in ${snapshot}` : ''}\n`,
    );
  else io.stdout.write(`failed at ${t.stage}: ${t.cause ?? 'error'}: ${t.message} (${t.source})\n`);
  return t.ok;
}

/** `vigil monitors …` */
export async function runMonitorsCommand(
  argv: string[],
  target: (config?: string) => DaemonTarget,
  io: CliIo = process,
) {
  const { values, positionals } = parseCommandLine('monitors', {
    args: argv,
    allowPositionals: true,
    options: {
      ...common,
      source: { type: 'string' },
      collection: { type: 'string' },
      name: { type: 'string' },
      fps: { type: 'string' },
      preview: { type: 'boolean' },
      disabled: { type: 'boolean' },
      test: { type: 'boolean' },
      pipeline: { type: 'string' },
      snapshot: { type: 'string' },
      timeout: { type: 'string' },
    },
  });
  const [action, ...rest] = positionals;
  if (values.help || !action) {
    io.stdout.write(MONITORS_USAGE);
    return values.help ? 0 : 2;
  }
  const t = target(values.config);
  const api = new DaemonClient(values.url ?? t.url, t.key);
  const json = values.json ?? false;
  const cameraUrl = () => {
    if (!values.source) throw Errors.usageError('--source RTSP_URL is required (--source - reads it from stdin)');
    return values.source === '-' ? readFileSync(0, 'utf8').trim() : values.source;
  };
  const timeout = numberOption('timeout', values.timeout);
  switch (action) {
    case 'list': {
      const monitors = await api.all<MonitorT>('/v1/monitors', 'monitors');
      io.stdout.write(
        json
          ? `${JSON.stringify(monitors, null, 2)}\n`
          : monitors.length
            ? monitors
                .map(
                  (m) =>
                    `${m.id}\t${m.enabled ? 'enabled' : 'disabled'}\t${m.runtime.status}\t${m.collection_id}\t${m.source.url}\t${m.name}\n`,
                )
                .join('')
            : 'no monitors\n',
      );
      return 0;
    }
    case 'add': {
      if (rest.length !== 1)
        throw Errors.usageError('usage: vigil monitors add ID --source RTSP_URL --collection COLLECTION');
      if (!values.collection) throw Errors.usageError('--collection COLLECTION is required');
      const url = cameraUrl();
      if (values.test) {
        const { test } = await api.call<{ test: MonitorTestResultT }>('POST', '/v1/monitors/test', {
          source: { url },
          ...(values.pipeline ? { pipeline: values.pipeline } : {}),
          ...(timeout !== undefined ? { timeout_seconds: timeout } : {}),
        });
        if (!reportTest(io, test, undefined, json)) return 1;
      }
      const fps = numberOption('fps', values.fps);
      const { monitor } = await api.call<{ monitor: MonitorT }>('POST', '/v1/monitors', {
        id: rest[0],
        name: values.name ?? rest[0],
        source: { url },
        collection_id: values.collection,
        enabled: !values.disabled,
        preview_enabled: values.preview ?? false,
        ...(fps !== undefined ? { inference_fps: fps } : {}),
      });
      io.stdout.write(
        json
          ? `${JSON.stringify(monitor, null, 2)}\n`
          : `added ${monitor.id} (${monitor.source.url}, collection ${monitor.collection_id}, ${monitor.enabled ? 'enabled' : 'disabled'})\n`,
      );
      return 0;
    }
    case 'remove': {
      if (rest.length !== 1) throw Errors.usageError('usage: vigil monitors remove ID');
      await api.call('DELETE', `/v1/monitors/${encodeURIComponent(rest[0]!)}`);
      io.stdout.write(json ? `${JSON.stringify({ removed: rest[0] })}\n` : `removed ${rest[0]}\n`);
      return 0;
    }
    case 'test': {
      if (rest.length > 1 || (rest.length === 1) === Boolean(values.source))
        throw Errors.usageError('usage: vigil monitors test ID, or vigil monitors test --source RTSP_URL');
      const options = {
        ...(values.pipeline ? { pipeline: values.pipeline } : {}),
        ...(timeout !== undefined ? { timeout_seconds: timeout } : {}),
      };
      const { test } = rest.length
        ? await api.call<{ test: MonitorTestResultT }>(
            'POST',
            `/v1/monitors/${encodeURIComponent(rest[0]!)}/test`,
            options,
          )
        : await api.call<{ test: MonitorTestResultT }>('POST', '/v1/monitors/test', {
            source: { url: cameraUrl() },
            ...options,
          });
      return reportTest(io, test, values.snapshot, json) ? 0 : 1;
    }
    case 'pipelines': {
      const r = await api.call<{
        current: string;
        pipelines: { id: string; label: string; available: boolean; problem: string | null; current: boolean }[];
      }>('GET', '/v1/monitor-pipelines');
      io.stdout.write(
        json
          ? `${JSON.stringify(r, null, 2)}\n`
          : r.pipelines
              .map(
                (p) =>
                  `${p.current ? '*' : ' '} ${p.id}\t${p.available ? 'available' : `not available (${p.problem})`}\t${p.label}\n`,
              )
              .join('') +
              (r.current === 'custom' ? '* custom ([monitors] pipeline is a template of its own)\n' : '') +
              'Choose one with: vigil config set monitors.pipeline ID\n',
      );
      return 0;
    }
    default:
      throw Errors.usageError(`unknown action "${action}" (see vigil monitors --help)`);
  }
}

/** `vigil collections …` */
export async function runCollectionsCommand(
  argv: string[],
  target: (config?: string) => DaemonTarget,
  io: CliIo = process,
) {
  const { values, positionals } = parseCommandLine('collections', {
    args: argv,
    allowPositionals: true,
    options: {
      ...common,
      name: { type: 'string' },
      threshold: { type: 'string' },
      'save-face-crops': { type: 'boolean' },
    },
  });
  const [action, ...rest] = positionals;
  if (values.help || !action) {
    io.stdout.write(COLLECTIONS_USAGE);
    return values.help ? 0 : 2;
  }
  const t = target(values.config);
  const api = new DaemonClient(values.url ?? t.url, t.key);
  switch (action) {
    case 'list': {
      const collections = await api.all<CollectionT>('/v1/collections', 'collections');
      io.stdout.write(
        values.json
          ? `${JSON.stringify(collections, null, 2)}\n`
          : collections
              .map(
                (c) =>
                  `${c.id}\t${c.name}\t${c.person_count} persons\t${c.face_count} faces\tthreshold ${c.default_threshold}\n`,
              )
              .join('') || 'no collections\n',
      );
      return 0;
    }
    case 'create': {
      if (rest.length !== 1) throw Errors.usageError('usage: vigil collections create ID [--name NAME]');
      const threshold = numberOption('threshold', values.threshold);
      const { collection } = await api.call<{ collection: CollectionT }>('POST', '/v1/collections', {
        id: rest[0],
        name: values.name ?? rest[0],
        ...(threshold !== undefined ? { threshold } : {}),
        ...(values['save-face-crops'] ? { save_face_crops: true } : {}),
      });
      io.stdout.write(
        values.json
          ? `${JSON.stringify(collection, null, 2)}\n`
          : `created ${collection.id} (threshold ${collection.default_threshold}, face crops ${collection.save_face_crops ? 'saved' : 'not saved'})\n`,
      );
      return 0;
    }
    default:
      throw Errors.usageError(`unknown action "${action}" (see vigil collections --help)`);
  }
}
