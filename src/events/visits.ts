import type { HistoryEventT } from '../contract/events.js';
import type { TimelineCamera, VisitT } from '../contract/unknowns.js';
import type { z } from 'zod';

type TimelineCameraT = z.infer<typeof TimelineCamera>;

/**
 * Visits from history events (any order): an enter opens a visit of its track, the next exit of the same
 * track closes it, zone events between them add their zones. An exit whose enter is gone (retention) makes no
 * visit. Newest first. Pure, so it is unit-tested.
 */
export function visitsOf(events: readonly HistoryEventT[]): VisitT[] {
  const key = (e: HistoryEventT) => `${e.box_id}\0${e.stream_epoch}\0${e.track_id}`;
  const sorted = events
    .filter((e) => e.track_id)
    .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a.sequence - b.sequence));
  const visits: VisitT[] = [];
  const open = new Map<string, VisitT & { zoneSet: Set<string> }>();
  const close = (k: string) => {
    const v = open.get(k);
    if (!v) return;
    open.delete(k);
    const { zoneSet, ...rest } = v;
    visits.push({ ...rest, zones: [...zoneSet].sort() });
  };
  for (const e of sorted) {
    const k = key(e);
    if (e.type.endsWith('_enter') && !e.type.startsWith('zone_')) {
      close(k);
      open.set(k, {
        monitor_id: e.monitor_id,
        box_id: e.box_id,
        track_id: e.track_id!,
        entered_at: e.occurred_at,
        exited_at: null,
        seconds: null,
        zones: [],
        zoneSet: new Set(e.zones ?? []),
        enter_event_id: e.id,
        exit_event_id: null,
      });
      continue;
    }
    const v = open.get(k);
    if (!v) continue;
    for (const z of e.zones ?? []) v.zoneSet.add(z);
    if (e.zone) v.zoneSet.add(e.zone);
    if (e.type.endsWith('_exit') && !e.type.startsWith('zone_')) {
      v.exited_at = e.occurred_at;
      v.exit_event_id = e.id;
      v.seconds = Math.round(Date.parse(e.occurred_at) - Date.parse(v.entered_at)) / 1000;
      close(k);
    }
  }
  for (const k of [...open.keys()]) close(k);
  return visits.sort((a, b) => (a.entered_at < b.entered_at ? 1 : a.entered_at > b.entered_at ? -1 : 0));
}

/** Per camera: visits, first and last seen, zones; the most recently seen camera first. */
export function camerasOf(visits: readonly VisitT[]): TimelineCameraT[] {
  const by = new Map<string, TimelineCameraT & { zoneSet: Set<string> }>();
  for (const v of visits) {
    const last = v.exited_at ?? v.entered_at;
    const c = by.get(v.monitor_id);
    if (!c) {
      by.set(v.monitor_id, {
        monitor_id: v.monitor_id,
        visits: 1,
        first_seen_at: v.entered_at,
        last_seen_at: last,
        zones: [],
        zoneSet: new Set(v.zones),
      });
      continue;
    }
    c.visits++;
    if (v.entered_at < c.first_seen_at) c.first_seen_at = v.entered_at;
    if (last > c.last_seen_at) c.last_seen_at = last;
    for (const z of v.zones) c.zoneSet.add(z);
  }
  return [...by.values()]
    .map(({ zoneSet, ...c }) => ({ ...c, zones: [...zoneSet].sort() }))
    .sort((a, b) => (a.last_seen_at < b.last_seen_at ? 1 : a.last_seen_at > b.last_seen_at ? -1 : 0));
}
