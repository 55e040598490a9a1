/**
 * Long-lived responses (a monitor's MJPEG preview) and the credential that opened them. A request is
 * authorised once, when it starts; a stream lasts for hours, so a revoked kiosk token kept delivering
 * frames (2.8 MB in the 40 s after its revoke; issue 36.4). Each stream's check is run again every
 * `intervalMs` (a revoke by `vigil kiosk revoke` happens in another process, on the same database) and at
 * once on recheck() (a revoke over the API), and a stream whose credential no longer holds is ended.
 * The timer runs only while a stream is open.
 */
export class AuthorizedStreams {
  private readonly open = new Set<{ valid: () => boolean; end: () => void }>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly intervalMs = 1000) {}

  get size(): number {
    return this.open.size;
  }

  /** Watches a stream until the returned function is called (the response closed). */
  add(valid: () => boolean, end: () => void): () => void {
    const entry = { valid, end };
    this.open.add(entry);
    if (!this.timer) {
      this.timer = setInterval(() => this.recheck(), this.intervalMs);
      this.timer.unref();
    }
    return () => {
      this.open.delete(entry);
      if (this.open.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = null;
      }
    };
  }

  /** Ends every stream whose credential no longer holds (a failing check counts as not holding). */
  recheck(): void {
    for (const entry of [...this.open]) {
      let ok = false;
      try {
        ok = entry.valid();
      } catch {
        /* the credential store failed: end the stream rather than keep it open unchecked */
      }
      if (!ok) {
        this.open.delete(entry);
        entry.end();
      }
    }
    if (this.open.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}
