/**
 * One `Range: bytes=...` header against a file of `size` bytes (RFC 9110 14.1.2): the inclusive byte span to
 * send, 'all' when there is no Range header (200 with the whole file), or 'unsatisfiable' (416). Only a
 * single range is served: browsers' media elements ask for one; a multi-range request is refused as
 * unsatisfiable rather than answered with multipart/byteranges.
 */
export function parseByteRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'all' | 'unsatisfiable' {
  if (header === undefined || header === '') return 'all';
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'unsatisfiable';
  if (m[1] === '') {
    // A suffix: the last N bytes.
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (!Number.isSafeInteger(start) || start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}
