import { readFileSync } from 'node:fs';

/** The package version, read once (works from src/ under tsx and from dist/). */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
