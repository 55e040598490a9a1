import test from 'ava';
import { cropRect, fitInside } from '../../src/events/snapshotStore.js';
import { filterSql } from '../../src/events/historyStore.js';
import {
  monitorDiscovery,
  monitorDiscoveryTopics,
  boxDiscovery,
  haId,
  staleDiscoveryTopics,
} from '../../src/events/homeAssistant.js';
import { webhookTypeOf } from '../../src/contract/events.js';
import { validateDiscovery } from '../helpers/homeAssistantSchema.js';

test('the crop grows the face box by the margin on every side and stays inside the frame', (t) => {
  t.deepEqual(cropRect({ x: 100, y: 100, width: 50, height: 60 }, 640, 360, 0.5), {
    left: 75,
    top: 70,
    width: 100,
    height: 120,
  });
  t.deepEqual(cropRect({ x: 5, y: 300, width: 50, height: 60 }, 640, 360, 0.5), {
    left: 0,
    top: 270,
    width: 80,
    height: 90,
  });
  t.is(cropRect({ x: 700, y: 10, width: 50, height: 50 }, 640, 360, 0.5), null);
  t.deepEqual(fitInside(1280, 720, 640), { width: 640, height: 360 });
  t.deepEqual(fitInside(320, 240, 640), { width: 320, height: 240 }, 'never upscaled');
});

test('history filters become one WHERE clause', (t) => {
  t.deepEqual(filterSql({}), { where: '1', params: [] });
  t.deepEqual(filterSql({ monitor_id: 'door', types: ['person_enter', 'person_exit'], since_ms: 5 }), {
    where: 'monitor_id = ? AND type IN (?, ?) AND occurred_ms >= ?',
    params: ['door', 'person_enter', 'person_exit', 5],
  });
  t.deepEqual(filterSql({ unknown_only: true }), {
    where: 'type IN (?, ?)',
    params: ['unknown_enter', 'unknown_exit'],
  });
  t.deepEqual(filterSql({ unknown_only: true, types: ['person_enter'] }), { where: '0', params: [] });
  t.is(webhookTypeOf('person_enter'), 'monitor.person_enter');
  t.is(webhookTypeOf('monitor_error'), 'monitor.error');
});

test('discovery payloads meet the Home Assistant schema for any monitor id', (t) => {
  const c = { prefix: 'vigil', discoveryPrefix: 'homeassistant', nodeId: haId('vigil-box.lan'), boxName: 'Vigil box' };
  t.is(c.nodeId, 'vigil-box_lan');
  for (const m of [...boxDiscovery(c), ...monitorDiscovery(c, { id: 'front.door_2', name: 'Front door' })])
    t.deepEqual(validateDiscovery(m.topic, m.payload), [], m.topic);
});

test('discovery ids are distinct for monitor ids that sanitise alike; ids that need no sanitising keep theirs', (t) => {
  const c = { prefix: 'vigil', discoveryPrefix: 'homeassistant', nodeId: 'box', boxName: 'Vigil box' };
  const ids = ['side.gate', 'side_gate', 'side-gate', 'a.b_c', 'a_b.c', 'a_b_c', 'door'];
  const uniqueIds = ids.map((id) => monitorDiscovery(c, { id, name: id }).map((m) => String(m.payload.unique_id)));
  const topics = ids.map((id) => monitorDiscoveryTopics(c, id));
  t.is(new Set(uniqueIds.flat()).size, ids.length * 4, JSON.stringify(uniqueIds));
  t.is(new Set(topics.flat()).size, ids.length * 4, JSON.stringify(topics));
  t.is(new Set(ids.map((id) => monitorDiscovery(c, { id, name: id })[0]!.payload.device)).size, ids.length);
  // Upgrades: monitors whose id is already a valid object id keep their entities' unique ids.
  t.deepEqual(uniqueIds[ids.indexOf('side_gate')], [
    'box_side_gate_occupancy',
    'box_side_gate_last_person',
    'box_side_gate_snapshot',
    'box_side_gate_motion',
  ]);
  t.deepEqual(uniqueIds[ids.indexOf('door')], [
    'box_door_occupancy',
    'box_door_last_person',
    'box_door_snapshot',
    'box_door_motion',
  ]);
  t.deepEqual(
    monitorDiscovery(c, { id: 'side.gate', name: 'x' }),
    monitorDiscovery(c, { id: 'side.gate', name: 'x' }),
    'stable',
  );
  for (const id of ids)
    for (const m of monitorDiscovery(c, { id, name: id }))
      t.deepEqual(validateDiscovery(m.topic, m.payload), [], m.topic);
  // After an upgrade the config topics side.gate had before are cleared, unless side_gate owns them.
  t.deepEqual(staleDiscoveryTopics(c, ['side.gate', 'door']), [
    'homeassistant/binary_sensor/box/side_gate_occupancy/config',
    'homeassistant/sensor/box/side_gate_last_person/config',
    'homeassistant/camera/box/side_gate_snapshot/config',
  ]);
  t.deepEqual(staleDiscoveryTopics(c, ['side.gate', 'side_gate']), []);
});

test('a monitor with zones gets an occupancy entity per zone, on the zone state topic', (t) => {
  const c = { prefix: 'vigil', discoveryPrefix: 'homeassistant', nodeId: 'box', boxName: 'Vigil box' };
  const messages = monitorDiscovery(c, {
    id: 'side.gate',
    name: 'Gate',
    zones: [{ name: 'porch' }, { name: 'Drive-1' }],
  });
  t.is(messages.length, 6);
  const zones = messages.slice(4);
  t.deepEqual(
    zones.map((m) => [m.topic, m.payload.state_topic, m.payload.unique_id]),
    [
      [
        'homeassistant/binary_sensor/box/_side_gate_8792381c361c_zone_porch/config',
        'vigil/side.gate/zone/porch/state',
        'box__side_gate_8792381c361c_zone_porch',
      ],
      [
        'homeassistant/binary_sensor/box/_side_gate_8792381c361c_zone_Drive-1/config',
        'vigil/side.gate/zone/Drive-1/state',
        'box__side_gate_8792381c361c_zone_Drive-1',
      ],
    ],
  );
  t.like(messages[3]!.payload, { device_class: 'motion', state_topic: 'vigil/side.gate/motion' });
  for (const m of messages) t.deepEqual(validateDiscovery(m.topic, m.payload), [], m.topic);
  // Deleting the monitor clears every one of them.
  t.deepEqual(
    monitorDiscoveryTopics(c, 'side.gate', ['porch', 'Drive-1']),
    messages.map((m) => m.topic),
  );
});
