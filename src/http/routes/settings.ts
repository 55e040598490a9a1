import { z } from 'zod';
import { SettingsPatch, SettingsPatchResponse, SettingsResponse } from '../../contract/settings.js';
import { readJson } from '../input.js';
import type { RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

/** Read as a plain object, so a wrong key is the settings service's setting_unknown (with the nearest key). */
const PatchBody = z.record(z.string(), z.unknown());

/** GET/PATCH /v1/settings (Vigil extension): admins only, like every operation that changes the box. */
export function settingsRoutes(rt: Runtime): RouteSpec[] {
  const maxBytes = rt.loaded.config.server.max_request_bytes;
  return [
    {
      method: 'get',
      path: '/v1/settings',
      operationId: 'get_settings_v1_settings_get',
      summary: 'Get Settings',
      tags: ['settings'],
      role: 'admin',
      description:
        'Vigil extension. Every key of server.toml (dotted, e.g. mqtt.url) with the value the daemon runs with, its default, where it came from (file, env, default), whether the API may change it, and whether a change applies at once (live) or at the next start (restart). Secrets are never returned (is_set says whether one is); URLs are shown without credentials. restart_pending: the file holds another value than the running one.',
      success: { status: 200, schema: SettingsResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, ...(await rt.settings.view()) };
      },
    },
    {
      method: 'patch',
      path: '/v1/settings',
      operationId: 'patch_settings_v1_settings_patch',
      summary: 'Patch Settings',
      tags: ['settings'],
      role: 'admin',
      description:
        'Vigil extension. Changes keys of server.toml, all or nothing: each value is validated by the schema the service starts with (400 settings_invalid names the key, nothing is written), the file is edited keeping its comments and replaced atomically, then every key that can be is applied without a restart (MQTT reconnects, retention, detection thresholds, monitors restart their streams). results says per key whether it was applied or waits for a restart. null removes a key from the file (its default applies). Credentials, where the service listens and its data stay in the file or the environment (400 setting_not_editable). `vigil config set KEY VALUE` does the same from a shell.',
      body: { contentType: 'application/json', schema: SettingsPatch },
      success: { status: 200, schema: SettingsPatchResponse },
      handler: async (ctx) => {
        const body = await readJson(ctx, PatchBody, maxBytes);
        const change = await rt.settings.patch(body);
        const keys = Object.keys(change.results);
        ctx.state.auditDetail = { keys, restart_required: change.restart_required };
        const view = await rt.settings.view();
        ctx.body = {
          request_id: ctx.state.requestId,
          ...change,
          settings: view.settings.filter((s) => keys.includes(s.key)),
        };
      },
    },
  ];
}
