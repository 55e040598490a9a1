/**
 * Fragmented MP4 (ISO BMFF) as GStreamer's mp4mux writes it in streamable mode (`fragment-duration`,
 * `streamable=true`): an init segment (ftyp + moov with mvex) and then one moof + mdat per fragment, a new
 * fragment at each key frame. Pure byte work, no I/O: split the muxer's output into init and fragments (with
 * their timing and whether they start on a key frame), renumber and rebase fragments so a clip starts at
 * time 0, write the clip's duration into its init segment, and find the whole part of a file cut short.
 */

/** A box header inside `buf`: its type, where it starts, its header size and its total size. */
export interface BoxHeader {
  type: string;
  start: number;
  header: number;
  size: number;
}

/** The box starting at `at` when its header is inside `buf` (its body may not be); null when it is not. */
export function readBoxHeader(buf: Uint8Array, at: number): BoxHeader | null {
  if (at + 8 > buf.length) return null;
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let size = v.getUint32(at);
  const type = String.fromCharCode(buf[at + 4]!, buf[at + 5]!, buf[at + 6]!, buf[at + 7]!);
  let header = 8;
  if (size === 1) {
    if (at + 16 > buf.length) return null;
    size = Number(v.getBigUint64(at + 8));
    header = 16;
  } else if (size === 0) size = buf.length - at; // to the end (only a last box may say so)
  if (size < header) throw new Error(`invalid MP4 box ${JSON.stringify(type)} of ${size} bytes`);
  return { type, start: at, header, size };
}

/** The child boxes of a container's body [from, to). */
function children(buf: Uint8Array, from: number, to: number): BoxHeader[] {
  const out: BoxHeader[] = [];
  for (let at = from; at + 8 <= to;) {
    const b = readBoxHeader(buf, at);
    if (!b || at + b.size > to) break;
    out.push(b);
    at += b.size;
  }
  return out;
}

/** The first box of `path` (types from the outermost container down) under [from, to), or null. */
function find(buf: Uint8Array, from: number, to: number, path: string[]): BoxHeader | null {
  let box: BoxHeader | null = null;
  for (const type of path) {
    box = children(buf, from, to).find((c) => c.type === type) ?? null;
    if (!box) return null;
    from = box.start + box.header;
    to = box.start + box.size;
  }
  return box;
}

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);

/** What a clip needs to know of the init segment. */
export interface InitInfo {
  /** The track's timescale (ticks per second of tfdt and sample durations). */
  timescale: number;
  /** The movie's timescale (mvhd: its duration, tkhd's and mehd's). */
  movieTimescale: number;
  /** trex defaults, used when a fragment does not say. */
  defaultSampleDuration: number;
  defaultSampleFlags: number;
  width: number;
  height: number;
  /** The sample entry (avc1, avc3, hvc1, hev1, ...). */
  codec: string;
}

/** Reads the init segment (ftyp + moov). Throws when it has no video track with a timescale. */
export function parseInit(init: Uint8Array): InitInfo {
  const moov = find(init, 0, init.length, ['moov']);
  if (!moov) throw new Error('the init segment has no moov box');
  const inMoov = (path: string[]) => find(init, moov.start + moov.header, moov.start + moov.size, path);
  const mvhd = inMoov(['mvhd']);
  const mdhd = inMoov(['trak', 'mdia', 'mdhd']);
  const tkhd = inMoov(['trak', 'tkhd']);
  if (!mvhd || !mdhd || !tkhd) throw new Error('the init segment has no movie or track header');
  const v = view(init);
  // mvhd / mdhd: version 1 has 64-bit creation and modification times before the timescale.
  const timescaleOf = (b: BoxHeader) => v.getUint32(b.start + b.header + (init[b.start + b.header] === 1 ? 20 : 12));
  const tk = tkhd.start + tkhd.header;
  // tkhd ends with width and height (16.16 fixed point).
  const tkEnd = tkhd.start + tkhd.size;
  const trex = inMoov(['mvex', 'trex']);
  const stsd = inMoov(['trak', 'mdia', 'minf', 'stbl', 'stsd']);
  const entry = stsd ? readBoxHeader(init, stsd.start + stsd.header + 8) : null;
  return {
    timescale: timescaleOf(mdhd),
    movieTimescale: timescaleOf(mvhd),
    defaultSampleDuration: trex ? v.getUint32(trex.start + trex.header + 12) : 0,
    defaultSampleFlags: trex ? v.getUint32(trex.start + trex.header + 20) : 0,
    width: tk < tkEnd - 8 ? v.getUint32(tkEnd - 8) >>> 16 : 0,
    height: tk < tkEnd - 4 ? v.getUint32(tkEnd - 4) >>> 16 : 0,
    codec: entry?.type ?? 'unknown',
  };
}

/** sample_is_non_sync_sample in a sample's flags. */
const NON_SYNC = 0x10000;

/** One moof + mdat: its bytes, where its counters are, and its timing in the track's timescale. */
export interface Fragment {
  data: Uint8Array;
  /** tfdt: the decode time of its first sample. */
  baseDecodeTime: number;
  /** Sum of its sample durations. */
  duration: number;
  samples: number;
  /** Its first sample is a key frame: a clip may start here. */
  sync: boolean;
  /** Byte offsets (in `data`) of mfhd's sequence number and tfdt's time, and tfdt's version (0: 32-bit). */
  sequenceAt: number;
  tfdtAt: number;
  tfdtVersion: number;
}

/** Reads a moof (at the start of `data`, its mdat after it) with the init's defaults. */
export function parseFragment(data: Uint8Array, init: InitInfo): Fragment {
  const moof = readBoxHeader(data, 0);
  if (!moof || moof.type !== 'moof' || moof.size > data.length) throw new Error('a fragment must start with a moof');
  const body = (b: BoxHeader) => b.start + b.header;
  const mfhd = find(data, body(moof), moof.start + moof.size, ['mfhd']);
  const traf = find(data, body(moof), moof.start + moof.size, ['traf']);
  if (!mfhd || !traf) throw new Error('the moof has no mfhd or traf');
  const v = view(data);
  const inTraf = children(data, body(traf), traf.start + traf.size);
  const tfhd = inTraf.find((b) => b.type === 'tfhd');
  const tfdt = inTraf.find((b) => b.type === 'tfdt');
  if (!tfhd || !tfdt) throw new Error('the traf has no tfhd or tfdt');
  // tfhd: flags, track id, then the optional fields in this order.
  const tfFlags = v.getUint32(body(tfhd)) & 0xffffff;
  let at = body(tfhd) + 8;
  if (tfFlags & 0x01) at += 8; // base data offset
  if (tfFlags & 0x02) at += 4; // sample description index
  let defaultDuration = init.defaultSampleDuration;
  let defaultFlags = init.defaultSampleFlags;
  if (tfFlags & 0x08) {
    defaultDuration = v.getUint32(at);
    at += 4;
  }
  if (tfFlags & 0x10) at += 4; // default sample size
  if (tfFlags & 0x20) defaultFlags = v.getUint32(at);
  const tfdtVersion = data[body(tfdt)]!;
  const baseDecodeTime = tfdtVersion === 1 ? Number(v.getBigUint64(body(tfdt) + 4)) : v.getUint32(body(tfdt) + 4);
  let duration = 0,
    samples = 0;
  let sync: boolean | null = null;
  for (const trun of inTraf.filter((b) => b.type === 'trun')) {
    const flags = v.getUint32(body(trun)) & 0xffffff;
    const count = v.getUint32(body(trun) + 4);
    let p = body(trun) + 8;
    if (flags & 0x01) p += 4; // data offset
    let firstFlags: number | null = null;
    if (flags & 0x04) {
      firstFlags = v.getUint32(p);
      p += 4;
    }
    for (let i = 0; i < count; i++) {
      let d = defaultDuration,
        f = i === 0 && firstFlags !== null ? firstFlags : defaultFlags;
      if (flags & 0x100) {
        d = v.getUint32(p);
        p += 4;
      }
      if (flags & 0x200) p += 4; // size
      if (flags & 0x400) {
        const own = v.getUint32(p);
        if (!(i === 0 && firstFlags !== null)) f = own;
        p += 4;
      }
      if (flags & 0x800) p += 4; // composition time offset
      duration += d;
      if (sync === null) sync = (f & NON_SYNC) === 0;
    }
    samples += count;
  }
  return {
    data,
    baseDecodeTime,
    duration,
    samples,
    sync: sync ?? false,
    sequenceAt: body(mfhd) + 4,
    tfdtAt: body(tfdt) + 4,
    tfdtVersion,
  };
}

/**
 * A copy of the fragment renumbered (mfhd sequence) and moved in time (tfdt), so a clip cut from a long
 * stream counts its fragments from 1 and starts at decode time 0.
 */
export function rebaseFragment(f: Fragment, sequence: number, baseDecodeTime: number): Uint8Array {
  const out = new Uint8Array(f.data);
  const v = view(out);
  v.setUint32(f.sequenceAt, sequence);
  if (f.tfdtVersion === 1) v.setBigUint64(f.tfdtAt, BigInt(Math.max(0, baseDecodeTime)));
  else v.setUint32(f.tfdtAt, Math.min(0xffffffff, Math.max(0, baseDecodeTime)));
  return out;
}

/**
 * A copy of the init segment that states the clip's duration (`mediaTicks` in the track's timescale) in
 * mvhd, tkhd, mdhd and mehd, so a player knows it before reading the fragments. Same length as the input,
 * so a file's init can be rewritten in place when the clip ends.
 */
export function initWithDuration(init: Uint8Array, mediaTicks: number): Uint8Array {
  const info = parseInit(init);
  const out = new Uint8Array(init);
  const v = view(out);
  const moov = find(out, 0, out.length, ['moov'])!;
  const inMoov = (path: string[]) => find(out, moov.start + moov.header, moov.start + moov.size, path);
  const movieTicks = Math.round((mediaTicks * info.movieTimescale) / Math.max(1, info.timescale));
  const put = (at: number, wide: boolean, value: number) => {
    if (wide) v.setBigUint64(at, BigInt(value));
    else v.setUint32(at, Math.min(0xffffffff, value));
  };
  // mvhd / mdhd: [version+flags] [creation] [modification] [timescale] [duration]
  for (const [path, ticks] of [
    [['mvhd'], movieTicks],
    [['trak', 'mdia', 'mdhd'], mediaTicks],
  ] as const) {
    const b = inMoov([...path]);
    if (!b) continue;
    const wide = out[b.start + b.header] === 1;
    put(b.start + b.header + (wide ? 24 : 16), wide, ticks);
  }
  // tkhd: [version+flags] [creation] [modification] [track id] [reserved] [duration]
  const tkhd = inMoov(['trak', 'tkhd']);
  if (tkhd) {
    const wide = out[tkhd.start + tkhd.header] === 1;
    put(tkhd.start + tkhd.header + (wide ? 28 : 20), wide, movieTicks);
  }
  const mehd = inMoov(['mvex', 'mehd']);
  if (mehd) {
    const wide = out[mehd.start + mehd.header] === 1;
    put(mehd.start + mehd.header + 4, wide, movieTicks);
  }
  return out;
}

/** What the splitter hands on: the init segment once (and again after a renegotiation), then fragments. */
export type Fmp4Part = { kind: 'init'; data: Uint8Array; info: InitInfo } | { kind: 'fragment'; fragment: Fragment };

/**
 * Cuts the muxer's byte stream (any chunking: mp4mux pushes the moof, the mdat header and each sample as
 * separate buffers) into the init segment and whole fragments. Boxes other than ftyp, moov, moof and mdat
 * (mfra at the end of a stream, free) are skipped. A fragment before any init segment is dropped.
 */
export class Fmp4Splitter {
  private chunks: Uint8Array[] = [];
  private length = 0;
  private ftyp: Uint8Array | null = null;
  private info: InitInfo | null = null;
  private moof: Uint8Array | null = null;

  push(chunk: Uint8Array): Fmp4Part[] {
    this.chunks.push(chunk);
    this.length += chunk.length;
    const out: Fmp4Part[] = [];
    for (;;) {
      const head = this.peek(16);
      const box = head ? readBoxHeader(head, 0) : null;
      // A box "to the end of the file" (size 0) cannot end in a stream: mp4mux never writes one here.
      if (!box || this.length < box.size) return out;
      const data = this.take(box.size);
      if (box.type === 'ftyp') this.ftyp = data;
      else if (box.type === 'moov') {
        const init = this.ftyp ? concat([this.ftyp, data]) : data;
        this.info = parseInit(init);
        out.push({ kind: 'init', data: init, info: this.info });
      } else if (box.type === 'moof') this.moof = data;
      else if (box.type === 'mdat' && this.moof) {
        const moof = this.moof;
        this.moof = null;
        if (this.info) out.push({ kind: 'fragment', fragment: parseFragment(concat([moof, data]), this.info) });
      }
    }
  }

  /** The first `n` bytes buffered (fewer when fewer are), without consuming them. */
  private peek(n: number): Uint8Array | null {
    if (this.length < 8) return null;
    const first = this.chunks[0]!;
    if (first.length >= n || this.chunks.length === 1) return first.subarray(0, Math.min(n, first.length));
    const out = new Uint8Array(Math.min(n, this.length));
    let at = 0;
    for (const c of this.chunks) {
      if (at >= out.length) break;
      const part = c.subarray(0, out.length - at);
      out.set(part, at);
      at += part.length;
    }
    return out;
  }

  private take(n: number): Uint8Array {
    const all = this.chunks.length === 1 ? this.chunks[0]! : concat(this.chunks);
    const data = all.slice(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.length = rest.length;
    return data;
  }
}

export function concat(parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** What a clip file holds up to its last whole fragment (a file cut short by a crash or a full disk). */
export interface ClipScan {
  /** Bytes of the init segment (ftyp + moov); 0 when the file does not start with a whole one. */
  initBytes: number;
  /** Bytes up to the end of the last whole moof + mdat (the rest is a torn write). */
  wholeBytes: number;
  fragments: number;
  /** Sum of the whole fragments' durations, in the track's timescale. */
  mediaTicks: number;
  info: InitInfo | null;
}

/** Scans a clip file's bytes: the init segment, then moof + mdat pairs until one is cut short. */
export function scanClip(file: Uint8Array): ClipScan {
  const none: ClipScan = { initBytes: 0, wholeBytes: 0, fragments: 0, mediaTicks: 0, info: null };
  let at = 0;
  let info: InitInfo | null = null;
  let initBytes = 0;
  let fragments = 0,
    ticks = 0,
    whole = 0;
  try {
    while (at < file.length) {
      const box = readBoxHeader(file, at);
      if (!box || at + box.size > file.length) break;
      if (box.type === 'moov') {
        info = parseInit(file.subarray(0, at + box.size));
        initBytes = whole = at + box.size;
      } else if (box.type === 'moof') {
        const mdat = readBoxHeader(file, at + box.size);
        if (!info || !mdat || mdat.type !== 'mdat' || at + box.size + mdat.size > file.length) break;
        const f = parseFragment(file.subarray(at, at + box.size + mdat.size), info);
        ticks += f.duration;
        fragments++;
        at += box.size + mdat.size;
        whole = at;
        continue;
      }
      at += box.size;
      if (!info) whole = 0;
    }
  } catch {
    // A torn box header: the whole part is what was read before it.
  }
  if (!info) return none;
  return { initBytes, wholeBytes: whole, fragments, mediaTicks: ticks, info };
}
