import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Samples kept at most (oldest deleted first), and the bytes kept of each. */
export const MAX_SAMPLES = 50;
export const MAX_SAMPLE_BYTES = 256 * 1024;

/**
 * Copies of upstream documents a scraper did not understand (a moved structure, a page we never saw),
 * kept in `<data_dir>/scrape-samples/` for diagnosis: the problem names the file. Bounded in count and
 * size; a failure to write one never fails the run.
 */
export class DiagnosticSamples {
  constructor(private readonly dir: string) {}

  save(what: string, body: string): string | null {
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const digest = createHash('sha256').update(body).digest('hex').slice(0, 12);
      const name = `${new Date().toISOString().replaceAll(':', '-')}-${digest}.txt`;
      const text = Buffer.from(body, 'utf8').subarray(0, MAX_SAMPLE_BYTES).toString('utf8');
      writeFileSync(join(this.dir, name), `# ${what}\n${text}`, { mode: 0o600 });
      this.prune();
      return name;
    } catch {
      return null;
    }
  }

  private prune(): void {
    const files = readdirSync(this.dir)
      .filter((f) => f.endsWith('.txt'))
      .map((f) => ({ f, at: statSync(join(this.dir, f)).mtimeMs }))
      .sort((a, b) => b.at - a.at || b.f.localeCompare(a.f));
    for (const { f } of files.slice(MAX_SAMPLES)) rmSync(join(this.dir, f), { force: true });
  }
}
