import { z } from 'zod';
import { Monitor, MonitorEvent, MonitorState } from '../monitors/model.js';
import { ErrorEnvelope, formInt } from './schemas.js';

/** Wire schemas of the monitor routes (InsightFace Server 0.3.x names). */
const id = (name: string) => ({ id: name });
const requestId = z.uuid();

export const MonitorResponse = z.looseObject({ request_id: requestId, monitor: Monitor }).meta(id('MonitorResponse'));
export const MonitorPageResponse = z.looseObject({ request_id: requestId, monitors: z.array(Monitor), next_cursor: z.string().nullable() }).meta(id('MonitorPageResponse'));
export const MonitorStateResponse = z.looseObject({ request_id: requestId, state: MonitorState }).meta(id('MonitorStateResponse'));
export const MonitorEventPageResponse = z
  .looseObject({
    request_id: requestId, monitor_id: z.string(), stream_epoch: z.string().nullable(), events: z.array(MonitorEvent),
    oldest_sequence: z.int().nullable(), latest_sequence: z.int(), has_more: z.boolean(), truncated: z.boolean(), stream_reset: z.boolean(),
    next_cursor: z.string().describe('Always present: resume from here, even when no events were returned.'),
  })
  .meta(id('MonitorEventPageResponse'));

export const MonitorListQuery = z.object({ limit: formInt(1, 100, 50), cursor: z.string().nullish() });
export const MonitorEventsQuery = z.object({ cursor: z.string().nullish(), limit: formInt(1, 1000, 100) });
export const CapacityExhausted = { '429': { schema: ErrorEnvelope, description: 'The enabled Monitor capacity is exhausted.' } };
