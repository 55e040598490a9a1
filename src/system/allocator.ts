/**
 * The memory allocator the daemon's process runs with. The systemd unit, scripts/run-dev.sh and the benches
 * preload jemalloc (Debian's libjemalloc2, installed by scripts/install-system-deps.sh); `vigil serve`
 * works without it and says so at start.
 *
 * Why: the daemon has ~60 native threads (libuv's pool with the parked GStreamer pulls, GStreamer's
 * decoders, libvips, ONNX Runtime's pools, the inference workers). glibc gives threads up to 8 arenas per
 * core and keeps what they free: with four cameras 531 MB were taken from the system for 346 MB in use,
 * and `malloc_trim` gave back 83 MB of resident memory at once (docs/development/decisions.md, "Inference"). jemalloc
 * returns freed pages after 10 s; the same 4-camera run is ~130 MB smaller with it and flat after warm-up.
 * The cost: uploads ~3 % slower (the raw pipeline the same).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The library the process preloads (a bare soname: ld.so finds it in the multiarch directory). */
export const DAEMON_ALLOCATOR_LIBRARY = 'libjemalloc.so.2';

export type MemoryAllocator = 'jemalloc' | 'glibc' | 'other';

/** Which allocator a process's memory map (/proc/<pid>/maps) shows: jemalloc when it is loaded, else libc's. */
export function allocatorFromMaps(maps: string): MemoryAllocator {
  if (/\/libjemalloc\.so[.\d]*$/m.test(maps)) return 'jemalloc';
  if (/\/libc\.so\.6$/m.test(maps)) return 'glibc';
  return 'other';
}

let current: MemoryAllocator | undefined;

/** This process's allocator (read once; the map does not change allocator after start). */
export function memoryAllocator(): MemoryAllocator {
  if (current === undefined) {
    let maps = '';
    try {
      maps = readFileSync('/proc/self/maps', 'utf8');
    } catch {
      // Not Linux: neither glibc's arenas nor LD_PRELOAD apply.
    }
    current = allocatorFromMaps(maps);
  }
  return current;
}

const LIBRARY_DIRS = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/lib',
  '/lib/x86_64-linux-gnu',
  '/lib/aarch64-linux-gnu',
];

/** The installed allocator library's path, or null when libjemalloc2 is not installed. */
export function daemonAllocatorPath(dirs: readonly string[] = LIBRARY_DIRS): string | null {
  for (const dir of dirs) {
    const path = join(dir, DAEMON_ALLOCATOR_LIBRARY);
    if (existsSync(path)) return path;
  }
  return null;
}

/**
 * The environment for a child process started the way the daemon is (the benches): the allocator
 * preloaded ahead of any LD_PRELOAD already set, when it is installed; otherwise the environment unchanged.
 */
export function withDaemonAllocator(
  env: NodeJS.ProcessEnv,
  path: string | null = daemonAllocatorPath(),
): NodeJS.ProcessEnv {
  if (!path || (env.LD_PRELOAD ?? '').split(/[:\s]+/).some((p) => p.endsWith(DAEMON_ALLOCATOR_LIBRARY))) return env;
  return { ...env, LD_PRELOAD: env.LD_PRELOAD ? `${path}:${env.LD_PRELOAD}` : path };
}
