/** Where a client is in a monitor's event stream: the session's epoch and the last sequence it saw. */
export interface EventPosition {
  epoch: string;
  sequence: number;
}

export interface EventPage<E> {
  events: E[];
  oldest_sequence: number | null;
  latest_sequence: number;
  has_more: boolean;
  truncated: boolean;
  stream_reset: boolean;
  /** The position to resume from: the last returned sequence, or the current position when nothing was returned. */
  next: EventPosition;
}

/**
 * The bounded in-memory event buffer of one session (events are never persisted). Sequences start at 1
 * and grow within an epoch; a new session is a new epoch, so a client can tell "you missed events"
 * (truncated) from "the stream restarted" (stream_reset).
 */
export class EventRing<E extends { sequence: number }> {
  private items: E[] = [];
  private latest = 0;

  constructor(
    readonly epoch: string,
    private capacity: number,
  ) {}

  /** Appends an event, assigning the next sequence; the oldest falls out when full. */
  push(make: (sequence: number) => E): E {
    const event = make(++this.latest);
    this.items.push(event);
    if (this.items.length > this.capacity) this.items.splice(0, this.items.length - this.capacity);
    return event;
  }

  /** Changes the capacity live, keeping the newest events. */
  resize(capacity: number): void {
    this.capacity = capacity;
    if (this.items.length > capacity) this.items.splice(0, this.items.length - capacity);
  }

  get size(): number {
    return this.items.length;
  }

  /**
   * No cursor, or one from another epoch: the newest `limit` events (`stream_reset` for another epoch).
   * Otherwise the events after the cursor, oldest first; `truncated` when some fell out of the ring
   * before the client read them.
   */
  page(after: EventPosition | null, limit: number): EventPage<E> {
    const oldest = this.items.length ? this.items[0]!.sequence : null;
    const base = { oldest_sequence: oldest, latest_sequence: this.latest };
    if (!after || after.epoch !== this.epoch) {
      const events = this.items.slice(Math.max(0, this.items.length - limit));
      return {
        ...base,
        events,
        has_more: false,
        truncated: false,
        stream_reset: after !== null,
        next: { epoch: this.epoch, sequence: this.latest },
      };
    }
    // A cursor ahead of the ring (cannot be issued by us within one epoch) reads as "nothing new".
    const from = Math.min(after.sequence, this.latest);
    const events = this.items.filter((e) => e.sequence > from).slice(0, limit);
    const last = events.length ? events[events.length - 1]!.sequence : from;
    return {
      ...base,
      events,
      has_more: last < this.latest,
      truncated: oldest !== null && from < oldest - 1,
      stream_reset: false,
      next: { epoch: this.epoch, sequence: last },
    };
  }
}

/** Cursor payload `{epoch}:{sequence}`; null when malformed. */
export function parseEventPosition(after: string): EventPosition | null {
  const m = /^([A-Za-z0-9-]{1,64}):(\d{1,15})$/.exec(after);
  return m ? { epoch: m[1]!, sequence: Number(m[2]) } : null;
}

export const formatEventPosition = (p: EventPosition): string => `${p.epoch}:${p.sequence}`;
