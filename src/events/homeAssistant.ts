import { createHash } from 'node:crypto';
import { VERSION } from '../contract/version.js';

/**
 * Home Assistant MQTT discovery (retained JSON on `<discovery_prefix>/<component>/<node_id>/<object_id>/config`):
 * one device per monitor, linked to the box's device by `via_device`, with an occupancy
 * `binary_sensor`, a "last person" `sensor`, a `camera` fed by the snapshot topic, a motion `binary_sensor`
 * and an occupancy `binary_sensor` per zone; the box has a
 * connectivity `binary_sensor` on the availability topic. Every entity is unavailable while Vigil's
 * availability topic says "offline" (its MQTT last will).
 */
export interface DiscoveryContext {
  prefix: string;
  discoveryPrefix: string;
  nodeId: string;
  boxName: string;
}
export interface DiscoveryMessage {
  topic: string;
  payload: Record<string, unknown>;
}

/** node_id and object_id allow only [a-zA-Z0-9_-] (HA's discovery topic rule). */
export const haId = (s: string): string => s.replace(/[^a-zA-Z0-9_-]/g, '_');

/**
 * A monitor's object id (its entities' topics and unique ids). An id HA accepts as it is stays itself, so
 * entities keep their unique ids across upgrades. Any other (a '.' in it) is sanitised, prefixed with '_'
 * and suffixed with a hash of the real id: `side.gate` -> `_side_gate_<hash>`. Monitor ids start with a
 * letter or digit, so no kept id can equal a hashed one, and two hashed ones differ unless their hashes
 * collide (`side.gate` and `side_gate` were one object before).
 */
export function monitorObjectId(monitorId: string): string {
  const safe = haId(monitorId);
  if (safe === monitorId) return monitorId;
  return `_${safe}_${createHash('sha256').update(monitorId).digest('hex').slice(0, 12)}`;
}

export interface MqttTopic {
  /** `{prefix}` is [mqtt] topic_prefix, `{discovery}` discovery_prefix, `{node}` the node id, `{object}` a monitor's object id, `{zone}` a zone's name. */
  pattern: string;
  /** Published by Vigil, or subscribed to. */
  direction: 'publish' | 'subscribe';
  /** Whether (or when) the broker retains it, in words. */
  retained: string;
  /** The payload, in Markdown. */
  payload: string;
}

/**
 * Every topic Vigil publishes or listens to. The publisher builds its topics from these patterns, and the
 * topic table of docs/integrations/mqtt.md is generated from them (`npm run docs:generate`).
 */
export const MQTT_TOPICS = {
  availability: {
    pattern: '{prefix}/available',
    direction: 'publish',
    retained: 'yes',
    payload: '`online`; the last will sets `offline`',
  },
  events: {
    pattern: '{prefix}/{monitor}/events',
    direction: 'publish',
    retained: '`[mqtt] retain` (off)',
    payload:
      'each event as JSON, the same object as `GET /v1/events/{id}` (with `clip`: its URL while it records and once ready, [event clips](../cameras.md#event-clips))',
  },
  state: {
    pattern: '{prefix}/{monitor}/state',
    direction: 'publish',
    retained: 'yes',
    payload:
      '`{"monitor_id", "occupied", "person_count", "unknown_count", "persons":[{id,name,since}], "last_person", "updated_at"}`; `last_person` is the newest `person_enter`\'s person from the history, so a restart keeps it',
  },
  person: {
    pattern: '{prefix}/{monitor}/person/{person_id}',
    direction: 'publish',
    retained: 'yes',
    payload: '`ON` / `OFF` (cleared, an empty retained message, when the monitor or the person is deleted)',
  },
  snapshot: {
    pattern: '{prefix}/{monitor}/snapshot',
    direction: 'publish',
    retained: 'yes',
    payload: "the latest identity event's frame, JPEG bytes (`[mqtt] snapshots`)",
  },
  motion: {
    pattern: '{prefix}/{monitor}/motion',
    direction: 'publish',
    retained: 'yes',
    payload:
      '`ON` when something moves in the picture, `OFF` after `[monitors.motion] off_delay_seconds` without motion (and when the monitor stops)',
  },
  zone: {
    pattern: '{prefix}/{monitor}/zone/{zone}/state',
    direction: 'publish',
    retained: 'yes',
    payload:
      '`{"monitor_id", "zone", "occupied", "person_count", "unknown_count", "persons":[{id,name,since}], "updated_at"}`: the faces in the zone now (from `zone_enter` / `zone_exit`); cleared when the zone or the monitor is removed',
  },
  boxStatusConfig: {
    pattern: '{discovery}/binary_sensor/{node}/status/config',
    direction: 'publish',
    retained: 'yes',
    payload: "the box's connectivity sensor (Home Assistant discovery)",
  },
  occupancyConfig: {
    pattern: '{discovery}/binary_sensor/{node}/{object}_occupancy/config',
    direction: 'publish',
    retained: 'yes',
    payload:
      "`device_class: occupancy`, `state_topic: vigil/<monitor>/state`, `value_template: {{ 'ON' if value_json.occupied else 'OFF' }}`",
  },
  lastPersonConfig: {
    pattern: '{discovery}/sensor/{node}/{object}_last_person/config',
    direction: 'publish',
    retained: 'yes',
    payload: '`state_topic: vigil/<monitor>/state`, template on `value_json.last_person`',
  },
  snapshotConfig: {
    pattern: '{discovery}/camera/{node}/{object}_snapshot/config',
    direction: 'publish',
    retained: 'yes',
    payload: '`topic: vigil/<monitor>/snapshot`',
  },
  motionConfig: {
    pattern: '{discovery}/binary_sensor/{node}/{object}_motion/config',
    direction: 'publish',
    retained: 'yes',
    payload: '`device_class: motion`, `state_topic: vigil/<monitor>/motion`',
  },
  zoneConfig: {
    pattern: '{discovery}/binary_sensor/{node}/{object}_zone_{zone}/config',
    direction: 'publish',
    retained: 'yes',
    payload:
      "one per zone: `device_class: occupancy`, `state_topic: vigil/<monitor>/zone/<zone>/state`, `value_template: {{ 'ON' if value_json.occupied else 'OFF' }}`",
  },
  homeAssistantStatus: {
    pattern: '{discovery}/status',
    direction: 'subscribe',
    retained: '',
    payload: "Home Assistant's `online` after its restart: Vigil sends the discovery messages again",
  },
} as const satisfies Record<string, MqttTopic>;

/** A topic from its pattern; every `{name}` must be given. */
export function topicOf(t: MqttTopic, values: Record<string, string>): string {
  return t.pattern.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`topic ${t.pattern} needs {${name}}`);
    return v;
  });
}

export const topics = (prefix: string) => ({
  availability: topicOf(MQTT_TOPICS.availability, { prefix }),
  events: (monitor: string) => topicOf(MQTT_TOPICS.events, { prefix, monitor }),
  state: (monitor: string) => topicOf(MQTT_TOPICS.state, { prefix, monitor }),
  person: (monitor: string, person_id: string) => topicOf(MQTT_TOPICS.person, { prefix, monitor, person_id }),
  snapshot: (monitor: string) => topicOf(MQTT_TOPICS.snapshot, { prefix, monitor }),
  motion: (monitor: string) => topicOf(MQTT_TOPICS.motion, { prefix, monitor }),
  zone: (monitor: string, zone: string) => topicOf(MQTT_TOPICS.zone, { prefix, monitor, zone }),
});

/** The topic on which Home Assistant announces its (re)start. */
export const homeAssistantStatusTopic = (discoveryPrefix: string) =>
  topicOf(MQTT_TOPICS.homeAssistantStatus, { discovery: discoveryPrefix });

const availability = (c: DiscoveryContext) => [
  { topic: topics(c.prefix).availability, payload_available: 'online', payload_not_available: 'offline' },
];
const boxDevice = (c: DiscoveryContext) => ({
  identifiers: [`${c.nodeId}`],
  name: c.boxName,
  manufacturer: 'Vigil',
  model: 'Vigil face service',
  sw_version: VERSION,
});

/** The box's own device and its connectivity sensor. */
export function boxDiscovery(c: DiscoveryContext): DiscoveryMessage[] {
  return [
    {
      topic: topicOf(MQTT_TOPICS.boxStatusConfig, { discovery: c.discoveryPrefix, node: c.nodeId }),
      payload: {
        name: 'Status',
        unique_id: `${c.nodeId}_status`,
        device_class: 'connectivity',
        entity_category: 'diagnostic',
        state_topic: topics(c.prefix).availability,
        payload_on: 'online',
        payload_off: 'offline',
        device: boxDevice(c),
      },
    },
  ];
}

/** The entities of one monitor (their config topics): occupancy, last person, snapshot, motion, then one per zone. */
export function monitorDiscoveryTopics(c: DiscoveryContext, monitorId: string, zones: string[] = []): string[] {
  const object = monitorObjectId(monitorId);
  return [
    ...objectTopics(c, object),
    topicOf(MQTT_TOPICS.motionConfig, { discovery: c.discoveryPrefix, node: c.nodeId, object }),
    ...zones.map((zone) => zoneConfigTopic(c, monitorId, zone)),
  ];
}

/** The config topic of one zone's occupancy sensor. */
export const zoneConfigTopic = (c: DiscoveryContext, monitorId: string, zone: string): string =>
  topicOf(MQTT_TOPICS.zoneConfig, {
    discovery: c.discoveryPrefix,
    node: c.nodeId,
    object: monitorObjectId(monitorId),
    zone,
  });

/**
 * Config topics that earlier versions used for monitors whose object id is now hashed (see
 * monitorObjectId), unless a current monitor owns that object id: their retained configs are cleared so
 * Home Assistant drops the old entities instead of keeping a duplicate of each.
 */
export function staleDiscoveryTopics(c: DiscoveryContext, monitorIds: string[]): string[] {
  const current = new Set(monitorIds.map(monitorObjectId));
  const stale = new Set(monitorIds.map(haId).filter((o) => !current.has(o)));
  return [...stale].flatMap((o) => objectTopics(c, o));
}

function objectTopics(c: DiscoveryContext, object: string): string[] {
  const values = { discovery: c.discoveryPrefix, node: c.nodeId, object };
  return [MQTT_TOPICS.occupancyConfig, MQTT_TOPICS.lastPersonConfig, MQTT_TOPICS.snapshotConfig].map((t) =>
    topicOf(t, values),
  );
}

export function monitorDiscovery(
  c: DiscoveryContext,
  monitor: { id: string; name: string; zones?: { name: string }[] },
): DiscoveryMessage[] {
  const t = topics(c.prefix);
  const o = monitorObjectId(monitor.id);
  const uid = `${c.nodeId}_${o}`;
  const device = {
    identifiers: [uid],
    name: monitor.name,
    manufacturer: 'Vigil',
    model: 'RTSP monitor',
    sw_version: VERSION,
    via_device: `${c.nodeId}`,
  };
  const zones = (monitor.zones ?? []).map((z) => z.name);
  const [occupancy, lastPerson, camera, motion, ...zoneTopics] = monitorDiscoveryTopics(c, monitor.id, zones) as [
    string,
    string,
    string,
    string,
    ...string[],
  ];
  const common = { availability: availability(c), availability_mode: 'latest', device };
  return [
    {
      topic: occupancy,
      payload: {
        name: 'Occupancy',
        unique_id: `${uid}_occupancy`,
        device_class: 'occupancy',
        state_topic: t.state(monitor.id),
        value_template: "{{ 'ON' if value_json.occupied else 'OFF' }}",
        payload_on: 'ON',
        payload_off: 'OFF',
        json_attributes_topic: t.state(monitor.id),
        ...common,
      },
    },
    {
      topic: lastPerson,
      payload: {
        name: 'Last person',
        unique_id: `${uid}_last_person`,
        icon: 'mdi:account-search',
        state_topic: t.state(monitor.id),
        value_template:
          "{{ value_json.last_person.name or value_json.last_person.id if value_json.last_person else 'none' }}",
        ...common,
      },
    },
    {
      topic: camera,
      payload: { name: 'Snapshot', unique_id: `${uid}_snapshot`, topic: t.snapshot(monitor.id), ...common },
    },
    {
      topic: motion,
      payload: {
        name: 'Motion',
        unique_id: `${uid}_motion`,
        device_class: 'motion',
        state_topic: t.motion(monitor.id),
        payload_on: 'ON',
        payload_off: 'OFF',
        ...common,
      },
    },
    ...zones.map((zone, i) => ({
      topic: zoneTopics[i]!,
      payload: {
        name: `Zone ${zone}`,
        unique_id: `${uid}_zone_${zone}`,
        device_class: 'occupancy',
        state_topic: t.zone(monitor.id, zone),
        value_template: "{{ 'ON' if value_json.occupied else 'OFF' }}",
        payload_on: 'ON',
        payload_off: 'OFF',
        json_attributes_topic: t.zone(monitor.id, zone),
        ...common,
      },
    })),
  ];
}
