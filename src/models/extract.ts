/**
 * Pulls exactly one named file out of a downloaded archive (zip) or npm tarball (.tgz). Nothing is
 * ever written under an archive-supplied name: the member streams into the caller's temp file.
 */
import { createReadStream } from 'node:fs';
import { Parser, type ReadEntry } from 'tar';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { streamToFile, TooLargeError, type Digest } from './fsutil.js';
import { SourceError } from './source-error.js';

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

export async function extractZipMember(zipPath: string, member: string, dest: string, limit: number): Promise<Digest> {
  const zip = await openZip(zipPath);
  try {
    const entry = pickOne(await listZipEntries(zip), (e) => e.fileName, member, 'zip archive');
    checkZipEntry(entry, limit);
    const stream = await zip.openReadStreamPromise(entry);
    return await streamToFile(stream, dest, limit);
  } catch (err) {
    throw asSourceError(err, 'zip archive');
  } finally {
    zip.close();
  }
}

async function openZip(path: string): Promise<ZipFile> {
  try {
    // validateEntrySizes: a member that inflates to more than its declared size is an error.
    return await yauzl.openPromise(path, { lazyEntries: true, autoClose: false, validateEntrySizes: true });
  } catch (err) {
    throw new SourceError('bad_archive', `not a readable zip archive (${(err as Error).message})`);
  }
}

function listZipEntries(zip: ZipFile): Promise<Entry[]> {
  return new Promise((resolve, reject) => {
    const entries: Entry[] = [];
    zip.on('entry', (entry: Entry) => {
      entries.push(entry);
      zip.readEntry();
    });
    zip.once('end', () => resolve(entries));
    zip.once('error', reject);
    zip.readEntry();
  });
}

function checkZipEntry(entry: Entry, limit: number): void {
  const mode = (entry.externalFileAttributes >>> 16) & S_IFMT;
  if (mode === S_IFLNK) throw new SourceError('bad_archive', `zip member ${entry.fileName} is a symlink`);
  if (entry.fileName.endsWith('/')) throw new SourceError('bad_archive', `zip member ${entry.fileName} is a directory`);
  if (entry.isEncrypted()) throw new SourceError('bad_archive', `zip member ${entry.fileName} is encrypted`);
  if (entry.uncompressedSize > limit)
    throw new SourceError('too_large', `zip member ${entry.fileName} ${new TooLargeError(limit).message}`);
}

export async function extractTarMember(
  tgzPath: string,
  memberPath: string,
  dest: string,
  limit: number,
): Promise<Digest> {
  const want = normalizeTarPath(memberPath);
  let matches = 0;
  let problem: SourceError | undefined;
  let writing: Promise<Digest> | undefined;

  const onEntry = (entry: ReadEntry): void => {
    if (normalizeTarPath(entry.path) !== want) return void entry.resume();
    matches += 1;
    problem ??= tarEntryProblem(entry, matches, limit);
    if (problem) return void entry.resume();
    writing = streamToFile(entryChunks(entry), dest, limit);
    // Keep the parser flowing after a failed write so parsing can still finish.
    writing.catch(() => entry.resume());
  };

  await parseTarFile(tgzPath, new Parser({ strict: true, onReadEntry: onEntry }));
  if (problem) throw problem;
  if (!writing) throw new SourceError('bad_archive', `${memberPath} is not in the package tarball`);
  try {
    return await writing;
  } catch (err) {
    throw asSourceError(err, 'package tarball');
  }
}

function tarEntryProblem(entry: ReadEntry, matches: number, limit: number): SourceError | undefined {
  if (matches > 1) return new SourceError('bad_archive', `${entry.path} appears more than once in the package tarball`);
  if (!['File', 'OldFile', 'ContiguousFile'].includes(entry.type)) {
    return new SourceError(
      'bad_archive',
      `${entry.path} in the package tarball is a ${entry.type}, not a regular file`,
    );
  }
  if (entry.size > limit) return new SourceError('too_large', `${entry.path} ${new TooLargeError(limit).message}`);
  return undefined;
}

/** An async generator, so stream.pipeline treats the minipass entry as a plain iterable. */
async function* entryChunks(entry: ReadEntry): AsyncGenerator<Buffer> {
  for await (const chunk of entry) yield chunk;
}

function parseTarFile(path: string, parser: Parser): Promise<void> {
  return new Promise((resolve, reject) => {
    parser.on('end', () => resolve());
    parser.on('error', (err: Error) =>
      reject(new SourceError('bad_archive', `not a readable package tarball (${err.message})`)),
    );
    const input = createReadStream(path);
    input.on('error', reject);
    input.pipe(parser as unknown as NodeJS.WritableStream);
  });
}

function normalizeTarPath(path: string): string {
  return path.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
}

/**
 * Exactly one entry must match, by full path or by path suffix (release zips sometimes nest files
 * under a folder named after the pack); macOS resource forks never count.
 */
function pickOne<T>(entries: T[], nameOf: (e: T) => string, member: string, what: string): T {
  const wanted = member.replace(/^\/+/, '');
  const hits = entries.filter((e) => {
    const name = nameOf(e);
    if (name.startsWith('__MACOSX/')) return false;
    return name === wanted || name.endsWith(`/${wanted}`);
  });
  const [only] = hits;
  if (!only) throw new SourceError('bad_archive', `${member} is not in the ${what}`);
  if (hits.length > 1) {
    throw new SourceError(
      'bad_archive',
      `${member} matches ${hits.length} entries in the ${what}: ${hits.map(nameOf).join(', ')}`,
    );
  }
  return only;
}

function asSourceError(err: unknown, what: string): SourceError {
  if (err instanceof SourceError) return err;
  if (err instanceof TooLargeError) return new SourceError('too_large', `member of the ${what} ${err.message}`);
  return new SourceError('bad_archive', `cannot extract from the ${what} (${(err as Error).message})`);
}
