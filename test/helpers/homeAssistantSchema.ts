/**
 * The Home Assistant MQTT discovery rules our payloads must meet, encoded from Home Assistant's
 * documentation (integrations/mqtt "MQTT Discovery", binary_sensor.mqtt, sensor.mqtt, camera.mqtt) and
 * its discovery topic matcher: a validator written apart from src/events so the tests can fail.
 * Returns the list of problems (empty = valid).
 */
const ID = /^[a-zA-Z0-9_-]+$/;
/** <discovery_prefix>/<component>/[<node_id>/]<object_id>/config */
const TOPIC =
  /^(?<prefix>[^/#+]+)\/(?<component>\w+)\/(?:(?<node>[a-zA-Z0-9_-]+)\/)?(?<object>[a-zA-Z0-9_-]+)\/config$/;
const BINARY_SENSOR_CLASSES = [
  'battery',
  'battery_charging',
  'carbon_monoxide',
  'cold',
  'connectivity',
  'door',
  'garage_door',
  'gas',
  'heat',
  'light',
  'lock',
  'moisture',
  'motion',
  'moving',
  'occupancy',
  'opening',
  'plug',
  'power',
  'presence',
  'problem',
  'running',
  'safety',
  'smoke',
  'sound',
  'tamper',
  'update',
  'vibration',
  'window',
];
const ENTITY_CATEGORIES = ['config', 'diagnostic'];
const DEVICE_KEYS = [
  'identifiers',
  'connections',
  'name',
  'manufacturer',
  'model',
  'model_id',
  'sw_version',
  'hw_version',
  'serial_number',
  'suggested_area',
  'via_device',
  'configuration_url',
];
const COMMON = [
  'name',
  'unique_id',
  'object_id',
  'default_entity_id',
  'device',
  'availability',
  'availability_topic',
  'availability_mode',
  'availability_template',
  'payload_available',
  'payload_not_available',
  'icon',
  'entity_category',
  'enabled_by_default',
  'json_attributes_topic',
  'json_attributes_template',
  'qos',
  'encoding',
  'origin',
  'entity_picture',
];
const BY_COMPONENT: Record<string, { required: string[]; allowed: string[] }> = {
  binary_sensor: {
    required: ['state_topic'],
    allowed: [
      'state_topic',
      'value_template',
      'payload_on',
      'payload_off',
      'device_class',
      'expire_after',
      'force_update',
      'off_delay',
    ],
  },
  sensor: {
    required: ['state_topic'],
    allowed: [
      'state_topic',
      'value_template',
      'device_class',
      'state_class',
      'unit_of_measurement',
      'expire_after',
      'force_update',
      'last_reset_value_template',
      'suggested_display_precision',
      'options',
    ],
  },
  camera: { required: ['topic'], allowed: ['topic', 'image_encoding'] },
};
const isTopic = (v: unknown) => typeof v === 'string' && v.length > 0 && !/[#+]/.test(v);

export function validateDiscovery(topic: string, payload: unknown): string[] {
  const problems: string[] = [];
  const m = TOPIC.exec(topic);
  if (!m) return [`topic ${topic} does not match <prefix>/<component>/[<node_id>/]<object_id>/config`];
  const component = m.groups!.component!;
  const spec = BY_COMPONENT[component];
  if (!spec) return [`component ${component} is not one we validate`];
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload))
    return ['payload is not a JSON object'];
  const p = payload as Record<string, unknown>;
  for (const k of Object.keys(p))
    if (!COMMON.includes(k) && !spec.allowed.includes(k)) problems.push(`${component}: unknown option ${k}`);
  for (const k of spec.required)
    if (!isTopic(p[k])) problems.push(`${component}: ${k} is required and must be a topic without wildcards`);
  if (p.name !== undefined && p.name !== null && typeof p.name !== 'string')
    problems.push('name must be a string or null');
  if (p.unique_id !== undefined && (typeof p.unique_id !== 'string' || !p.unique_id))
    problems.push('unique_id must be a non-empty string');
  if (p.availability !== undefined && p.availability_topic !== undefined)
    problems.push('availability and availability_topic are exclusive');
  if (p.availability !== undefined) {
    if (!Array.isArray(p.availability) || p.availability.length === 0)
      problems.push('availability must be a non-empty list');
    else
      for (const a of p.availability as Record<string, unknown>[]) {
        if (!isTopic(a.topic)) problems.push('availability[].topic is required');
        for (const k of Object.keys(a))
          if (!['topic', 'payload_available', 'payload_not_available', 'value_template'].includes(k))
            problems.push(`availability[]: unknown key ${k}`);
      }
  }
  if (p.availability_mode !== undefined && !['all', 'any', 'latest'].includes(p.availability_mode as string))
    problems.push('availability_mode must be all, any or latest');
  if (p.entity_category !== undefined && !ENTITY_CATEGORIES.includes(p.entity_category as string))
    problems.push('entity_category must be config or diagnostic');
  if (p.qos !== undefined && ![0, 1, 2].includes(p.qos as number)) problems.push('qos must be 0, 1 or 2');
  if (
    component === 'binary_sensor' &&
    p.device_class !== undefined &&
    !BINARY_SENSOR_CLASSES.includes(p.device_class as string)
  )
    problems.push(`binary_sensor: device_class ${String(p.device_class)} is not valid`);
  if (component === 'camera' && p.image_encoding !== undefined && p.image_encoding !== 'b64')
    problems.push('camera: image_encoding may only be b64');
  if (p.device !== undefined) {
    // The device registry only works through discovery with a unique_id.
    if (p.unique_id === undefined) problems.push('device needs unique_id');
    const d = p.device as Record<string, unknown>;
    for (const k of Object.keys(d)) if (!DEVICE_KEYS.includes(k)) problems.push(`device: unknown key ${k}`);
    const ids = d.identifiers,
      conns = d.connections;
    const hasIds =
      typeof ids === 'string'
        ? ids.length > 0
        : Array.isArray(ids) && ids.length > 0 && ids.every((x) => typeof x === 'string' && x.length > 0);
    const hasConns = Array.isArray(conns) && conns.length > 0;
    if (!hasIds && !hasConns) problems.push('device needs identifiers or connections');
    if (d.via_device !== undefined && typeof d.via_device !== 'string')
      problems.push('device.via_device must be a string (an identifier of another device)');
  }
  if (m.groups!.node && !ID.test(m.groups!.node)) problems.push('node_id charset');
  return problems;
}
