import type { PersonService } from '../collections/personService.js';
import type { EventListQueryT, HistoryEventT } from '../contract/events.js';
import type { TimelineQueryT } from '../contract/unknowns.js';
import type { EventService } from './eventService.js';
import { camerasOf, visitsOf } from './visits.js';

/** Events one timeline reads at most (newest first); older ones are left out and the answer says so. */
const MAX_EVENTS = 10_000;
const PAGE = 500;

/**
 * Where and when a person was seen (issue 42): their visits (enter to exit per track), per camera with the
 * zones, first and last seen, from the event history (the fleet's in fleet mode, like GET /v1/events).
 */
export class PersonTimeline {
  constructor(
    private readonly events: EventService,
    private readonly persons: PersonService,
  ) {}

  async timeline(collectionId: string, personId: string, q: TimelineQueryT) {
    const person = this.persons.get(collectionId, personId);
    const items: HistoryEventT[] = [];
    let cursor: string | null = null;
    let truncated = false;
    do {
      const query: EventListQueryT = {
        limit: PAGE,
        cursor,
        collection_id: collectionId,
        person_id: personId,
        monitor_id: q.monitor_id,
        type: ['person_enter', 'person_exit', 'zone_enter', 'zone_exit'],
        since: q.since,
        until: q.until,
        box_id: undefined,
        unknown_id: undefined,
        unknown_only: undefined,
      };
      const page = await this.events.list(query);
      items.push(...page.items);
      cursor = page.next_cursor;
      if (cursor && items.length >= MAX_EVENTS) truncated = true;
    } while (cursor && !truncated);
    const visits = visitsOf(items);
    const last = visits.reduce<string | null>((m, v) => {
      const t = v.exited_at ?? v.entered_at;
      return m === null || t > m ? t : m;
    }, null);
    return {
      collection_id: collectionId,
      person,
      first_seen_at: visits.length ? visits[visits.length - 1]!.entered_at : null,
      last_seen_at: last,
      visit_count: visits.length,
      cameras: camerasOf(visits),
      visits: visits.slice(0, q.limit),
      truncated,
    };
  }
}
