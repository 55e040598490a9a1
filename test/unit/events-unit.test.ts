import test from 'ava';
import { cropRect, fitInside } from '../../src/events/snapshotStore.js';
import { filterSql } from '../../src/events/historyStore.js';
import { monitorDiscovery, boxDiscovery, haId } from '../../src/events/homeAssistant.js';
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
