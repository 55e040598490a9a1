import test from 'ava';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { importsOf, layerViolations } from '../../scripts/check-layers.js';
import { REPO } from '../helpers/shared.js';
import { fileTempDir } from '../helpers/tempDir.js';

function tree(files: Record<string, string>): string {
  const root = fileTempDir('vigil-layers-');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

test('importsOf finds static, type-only, re-export and dynamic relative imports, not packages', (t) => {
  const src = `import { a } from './a.js';\nimport type { B } from '../b/b.js';\nexport { c } from './c.js';\nconst d = await import('./d.js');\nimport z from 'zod';\n`;
  t.deepEqual(importsOf(src), [
    { spec: './a.js', typeOnly: false },
    { spec: '../b/b.js', typeOnly: true },
    { spec: './c.js', typeOnly: false },
    { spec: './d.js', typeOnly: false },
  ]);
});

test('an upward or sideways import is a violation; downward and same-folder imports are not', (t) => {
  const root = tree({
    'contract/errors.ts': 'export const x = 1;\n',
    'collections/model.ts': "import { x } from '../contract/errors.js';\nimport { y } from './other.js';\n",
    'search/index.ts': "import type { C } from '../collections/model.js';\n",
    'inference/engine.ts': "import { s } from '../search/index.js';\n",
    'web/page.ts': "import type { T } from '../contract/errors.js';\nimport { u } from '../http/app.js';\n",
  });
  try {
    const v = layerViolations(root);
    t.is(v.length, 3, v.join('\n'));
    t.true(v.some((l) => l.startsWith('src/search/index.ts') && /higher layer/.test(l)));
    t.true(v.some((l) => l.startsWith('src/inference/engine.ts') && /share layer/.test(l)));
    t.true(v.some((l) => l.startsWith('src/web/page.ts') && /browser code/.test(l)));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the repository itself has no layer violations', (t) => {
  t.deepEqual(layerViolations(join(REPO, 'src')), []);
});
