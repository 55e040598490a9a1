import { readFileSync } from 'node:fs';

/** The package version, read once (works from src/ under tsx and from dist/). */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * The InsightFace Server API contract this build speaks, as upstream clients read it from
 * `/v1/health` `version` and `/v1/system` `server_version` (they gate features on it). Vigil's own
 * version is reported beside it as `vigil_version`.
 */
export const API_CONTRACT_VERSION = '0.3.1';
