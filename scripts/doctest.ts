/**
 * The doc-test runner's pure part: finds the shell snippets of README.md and docs/**.md, turns a page's
 * snippets into one bash script, and judges its output. test/docs/doctest.test.ts runs every page against a
 * real daemon (docs/development/tests.md, "Doc-tests", says how a page is written for it).
 *
 * Markers (HTML comments, invisible on GitHub), each on a line of its own:
 *   <!-- doctest: skip (reason) -->   on the line before a ```sh fence: the block is not run
 *   <!-- doctest: expect -->          right before a ```text block after a ```sh block (prose may come
 *                                     between): every line of the text block must appear in the sh block's
 *                                     output, `…` standing for anything
 *   <!-- doctest: setup NAME … -->    once per page: what the box needs before the page runs
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** What a page can ask the doc-test box for, besides the daemon, the camera and the `vigil` command. */
export const SETUPS = {
  staff: 'a collection "staff" with Barack Obama enrolled from two photos (getting-started.md steps 3 and 4)',
  door: 'staff, and a monitor "door" on the test camera that has seen Obama enter (getting-started.md step 6)',
  mqtt: 'a Mosquitto broker at $MQTT_URL',
  receiver: 'a webhook receiver at $RECEIVER that answers 204',
  postgres: 'a PostgreSQL cluster at $PGHOST:$PGPORT, its superuser $PGUSER (postgres); $STORE_URL for a role vigil',
} as const;
export type SetupName = keyof typeof SETUPS;

export interface DocBlock {
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
  /** Why the block is not run, or null. */
  skip: string | null;
  /** Lines that must appear in the output. */
  expect: string[];
}

export interface DocPage {
  /** Relative to the repository root. */
  file: string;
  blocks: DocBlock[];
  setup: SetupName[];
}

const FENCE = /^```([\w-]*)\s*$/;
const MARKER = /^<!--\s*doctest:\s*(.*?)\s*-->\s*$/;
/** Fences that hold shell commands: only `sh` is run, so the others are refused rather than left untested. */
const OTHER_SHELLS = new Set(['bash', 'shell', 'console', 'shell-session', 'zsh']);

/** The sh blocks and markers of one page; a marker it does not understand is an error, never ignored. */
export function parsePage(file: string, text: string): DocPage {
  const lines = text.split('\n');
  const page: DocPage = { file, blocks: [], setup: [] };
  const fail = (i: number, why: string) => new Error(`${file}:${i + 1}: ${why}`);
  let pendingSkip: { reason: string; at: number } | null = null;
  let expectFor: DocBlock | null = null;
  let expecting = false;
  let lastBlock: DocBlock | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const marker = MARKER.exec(line);
    if (marker) {
      const m = marker[1]!;
      const skip = /^skip \((.+)\)$/.exec(m);
      if (skip) pendingSkip = { reason: skip[1]!, at: i };
      else if (m === 'expect') {
        if (!lastBlock) throw fail(i, 'an expect marker must follow a ```sh block');
        expectFor = lastBlock;
        expecting = true;
      } else if (m.startsWith('setup ')) {
        for (const name of m.slice(6).split(/\s+/)) {
          if (!(name in SETUPS)) throw fail(i, `unknown setup "${name}" (known: ${Object.keys(SETUPS).join(', ')})`);
          page.setup.push(name as SetupName);
        }
      } else throw fail(i, `unknown doctest marker "${m}" (skip (reason), expect, setup NAME)`);
      continue;
    }
    const fence = FENCE.exec(line);
    if (!fence) {
      if (line.trim() !== '') {
        if (pendingSkip) throw fail(pendingSkip.at, 'a skip marker must be right before a ```sh fence');
        if (expecting) throw fail(i, 'an expect marker must be followed by a ```text block');
      }
      continue;
    }
    const lang = fence[1]!;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    if (end >= lines.length) throw fail(i, 'unclosed code fence');
    const body = lines.slice(i + 1, end);
    if (OTHER_SHELLS.has(lang))
      throw fail(i, `a \`\`\`${lang} block: write shell commands as \`\`\`sh so they are tested`);
    if (expecting) {
      if (lang !== 'text') throw fail(i, 'an expect marker must be followed by a ```text block');
      expectFor!.expect.push(...body.map((l) => l.trim()).filter(Boolean));
      expecting = false;
      lastBlock = null;
    } else if (lang === 'sh') {
      const block: DocBlock = { line: i + 1, code: body.join('\n'), skip: pendingSkip?.reason ?? null, expect: [] };
      page.blocks.push(block);
      lastBlock = block;
    } else {
      if (pendingSkip) throw fail(pendingSkip.at, 'a skip marker must be right before a ```sh fence');
      lastBlock = null;
    }
    pendingSkip = null;
    i = end;
  }
  if (expecting) throw fail(lines.length - 1, 'an expect marker at the end of the page');
  return page;
}

/** README.md and every page under docs/, relative to the repository root, in a stable order. */
export function documentationPages(repo: string): string[] {
  const pages: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.md')) pages.push(relative(repo, join(dir, e.name)));
    }
  };
  walk(join(repo, 'docs'));
  return ['README.md', ...pages];
}

export function readPage(repo: string, file: string): DocPage {
  return parsePage(file, readFileSync(join(repo, file), 'utf8'));
}

/** Separates the blocks' output; a control character no command prints. */
const MARK = '\x1edoctest-block';

/**
 * One bash script running the page's blocks in order in one shell (variables carry from block to block, as
 * in a reader's terminal), each under `set -euo pipefail`: a failing command, a failing pipe stage or an
 * undefined variable stops the page there.
 */
export function pageScript(page: DocPage): string {
  const out = ['exec 2>&1'];
  page.blocks.forEach((b, i) => {
    if (b.skip) return;
    out.push(`printf '\\n${MARK} %s\\n' ${i}`, 'set -euo pipefail', b.code);
  });
  out.push(`printf '\\n${MARK} end\\n'`);
  return `${out.join('\n')}\n`;
}

export interface BlockResult {
  block: DocBlock;
  output: string;
  /** Why it failed, or null. */
  failure: string | null;
}

/** Does `expected` (with `…` for anything) appear within one line of `output`? */
export function outputHas(output: string, expected: string): boolean {
  const pieces = expected.split('…').map((p) => p.trim());
  return output.split('\n').some((line) => {
    let at = 0;
    for (const piece of pieces) {
      const found = line.indexOf(piece, at);
      if (found < 0) return false;
      at = found + piece.length;
    }
    return true;
  });
}

/** The API's error envelope: a snippet that gets one failed, unless its expected output shows it. */
const ERROR_ENVELOPE = /"error":\s*\{\s*"code":\s*"([a-z_]+)"/;

/** Each run block's output and verdict, from the page script's combined output and exit status. */
export function judgePage(page: DocPage, output: string, exitCode: number | null): BlockResult[] {
  const parts = output.split(new RegExp(`\\n?${MARK} `));
  const results: BlockResult[] = [];
  let ended = false;
  for (const part of parts.slice(1)) {
    const nl = part.indexOf('\n');
    const id = nl < 0 ? part : part.slice(0, nl);
    const text = nl < 0 ? '' : part.slice(nl + 1);
    if (id === 'end') {
      ended = true;
      break;
    }
    const block = page.blocks[Number(id)]!;
    results.push({ block, output: text, failure: null });
  }
  const last = results.at(-1);
  if (!ended || exitCode !== 0) {
    const why = exitCode === null ? 'timed out' : `exited with status ${exitCode}`;
    if (last) last.failure = `the block ${why}`;
    else results.push({ block: page.blocks[0]!, output, failure: `the page ${why} before its first block` });
  }
  for (const r of results) {
    if (r.failure) continue;
    const missing = r.block.expect.filter((e) => !outputHas(r.output, e));
    if (missing.length) r.failure = `expected output not found:\n  ${missing.join('\n  ')}`;
    const error = ERROR_ENVELOPE.exec(r.output);
    if (!r.failure && error && !r.block.expect.some((e) => e.includes(error[1]!)))
      r.failure = `the API answered an error (${error[1]}) that the page does not show as expected output`;
  }
  return results;
}
