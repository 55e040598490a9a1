/** Whether a pid belongs to a running process (EPERM means it runs as another user). Used to spot stale lock and temp files. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
