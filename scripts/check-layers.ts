/**
 * Checks that every import in src/ points down the layer order (docs/development/architecture.md, "Layers"). A folder may
 * import itself and any folder of a lower rank; folders of the same rank may not import each other.
 * The browser code (src/web) may only `import type` from the contract. Run by `npm run lint`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Lowest first. */
export const LAYERS: string[][] = [
  ['contract'],
  ['log', 'system', 'config'],
  ['store', 'models'],
  ['inference', 'search', 'webhooks'],
  ['auth', 'users', 'workspaces', 'collections', 'addons'],
  ['scrapers', 'monitors'],
  ['events'],
  ['mcp'],
  ['http'],
  ['cli'],
];

const rank = new Map(LAYERS.flatMap((folders, i) => folders.map((f) => [f, i] as const)));

function* tsFiles(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* tsFiles(p);
    else if (e.name.endsWith('.ts')) yield p;
  }
}

/** Every relative import specifier of a module (static imports, re-exports and dynamic imports), with whether it is type-only. */
export function importsOf(source: string): { spec: string; typeOnly: boolean }[] {
  const out: { spec: string; typeOnly: boolean }[] = [];
  const re =
    /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;
  for (const m of source.matchAll(re)) {
    if (m[3]) out.push({ spec: m[3], typeOnly: Boolean(m[2]) });
    else if (m[4]) out.push({ spec: m[4], typeOnly: false });
  }
  return out;
}

/** The layer violations of the tree under `srcDir`, as readable lines. */
export function layerViolations(srcDir: string): string[] {
  const problems: string[] = [];
  for (const file of tsFiles(srcDir)) {
    const from = relative(srcDir, file).split(sep)[0]!;
    if (from.endsWith('.ts')) {
      problems.push(`${relative(srcDir, file)}: modules belong in a layer folder`);
      continue;
    }
    for (const { spec, typeOnly } of importsOf(readFileSync(file, 'utf8'))) {
      const target = relative(srcDir, normalize(join(dirname(file), spec)));
      const to = target.split(sep)[0]!;
      if (to === from || target.startsWith('..')) continue;
      const where = `src/${relative(srcDir, file)} imports ${spec}`;
      if (from === 'web') {
        if (to !== 'contract' || !typeOnly)
          problems.push(`${where}: browser code may only \`import type\` from src/contract`);
        continue;
      }
      const a = rank.get(from),
        b = rank.get(to);
      if (a === undefined) problems.push(`${where}: folder "${from}" has no layer in scripts/check-layers.ts`);
      else if (b === undefined) problems.push(`${where}: folder "${to}" has no layer in scripts/check-layers.ts`);
      else if (b > a) problems.push(`${where}: ${from} (layer ${a}) may not import ${to} (layer ${b}), a higher layer`);
      else if (b === a) problems.push(`${where}: ${from} and ${to} share layer ${a} and may not import each other`);
    }
  }
  return problems;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === normalize(process.argv[1])) {
  const problems = layerViolations(fileURLToPath(new URL('../src', import.meta.url)));
  for (const p of problems) console.error(p);
  if (problems.length) process.exit(1);
  console.log(`layers ok: ${LAYERS.map((l) => l.join(' ')).join(' < ')}`);
}
