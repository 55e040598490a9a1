/**
 * Splits a multipart/x-mixed-replace body (the MJPEG preview) into its parts. Pure: it knows bytes, not
 * the DOM, so it has unit tests. Parts with Content-Length are cut by length; otherwise at the next
 * boundary line.
 */
const CRLFCRLF = [13, 10, 13, 10];

export function boundaryOf(contentType: string | null): string | null {
  if (!contentType || !/^multipart\//i.test(contentType)) return null;
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2]!) : null;
}

function indexOf(hay: Uint8Array, needle: ArrayLike<number>, from: number, to = hay.length): number {
  const first = needle[0]!;
  for (let i = from; i <= to - needle.length; i++) {
    if (hay[i] !== first) continue;
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/** One part of the stream: its headers (lower-case names) and its body. */
export interface Part {
  headers: Record<string, string>;
  body: Uint8Array;
}

/** "Content-Type: image/jpeg\r\nX-Frame-Seq: 7" -> { 'content-type': 'image/jpeg', 'x-frame-seq': '7' } */
export function headerMap(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) out[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return out;
}

export class MultipartParser {
  private buf = new Uint8Array(0);
  private readonly delimiter: Uint8Array;
  private readonly nextDelimiter: Uint8Array;

  /** `maxPartBytes` bounds the buffer, so a stream that never delimits cannot grow memory without end. */
  constructor(
    boundary: string,
    private readonly maxPartBytes = 16 * 1024 * 1024,
  ) {
    this.delimiter = new TextEncoder().encode(`--${boundary}`);
    this.nextDelimiter = new TextEncoder().encode(`\r\n--${boundary}`);
  }

  /** Feeds a chunk; returns the bodies of the parts it completed, in order. */
  push(chunk: Uint8Array): Uint8Array[] {
    return this.pushParts(chunk).map((p) => p.body);
  }

  /** Feeds a chunk; returns the parts it completed, in order, with their headers (names in lower case). */
  pushParts(chunk: Uint8Array): Part[] {
    const joined = new Uint8Array(this.buf.length + chunk.length);
    joined.set(this.buf);
    joined.set(chunk, this.buf.length);
    const parts: Part[] = [];
    let pos = 0;
    for (;;) {
      const start = indexOf(joined, this.delimiter, pos);
      if (start < 0) break;
      const headerEnd = indexOf(joined, CRLFCRLF, start + this.delimiter.length);
      if (headerEnd < 0) {
        pos = start;
        break;
      }
      const headers = new TextDecoder().decode(joined.subarray(start + this.delimiter.length, headerEnd));
      const bodyStart = headerEnd + 4;
      const length = /content-length:\s*(\d+)/i.exec(headers);
      let bodyEnd: number;
      if (length) {
        bodyEnd = bodyStart + Number(length[1]);
        if (bodyEnd > joined.length) {
          pos = start;
          break;
        }
      } else {
        bodyEnd = indexOf(joined, this.nextDelimiter, bodyStart);
        if (bodyEnd < 0) {
          pos = start;
          break;
        }
      }
      parts.push({ headers: headerMap(headers), body: joined.slice(bodyStart, bodyEnd) });
      pos = bodyEnd;
    }
    // Keep only what is not consumed yet; drop leading junk before any delimiter but a possible partial one.
    const rest =
      indexOf(joined, this.delimiter, pos) < 0 ? Math.max(pos, joined.length - this.nextDelimiter.length) : pos;
    this.buf = joined.slice(rest);
    if (this.buf.length > this.maxPartBytes) throw new Error(`an MJPEG part exceeds ${this.maxPartBytes} bytes`);
    return parts;
  }
}
