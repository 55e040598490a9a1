import test from 'ava';
import { join } from 'node:path';
import pino from 'pino';
import { mqttOptions } from '../../src/cli/daemonSettings.js';
import { configFromText } from '../../src/config/load.js';
import { HistoryStore } from '../../src/events/historyStore.js';
import { MqttPublisher } from '../../src/events/mqttPublisher.js';
import { openDatabase, type OpenedDatabase } from '../../src/store/database.js';
import { waitFor } from '../helpers/monitors.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * The rows a person delete's trigger writes for the MQTT output (mqtt_person_topics_cleared, migration 0017)
 * are consumed whether or not [mqtt] is on: with MQTT off nothing is published (as for every other change
 * made while it is off), and the table does not grow with every deleted person on a box without a broker.
 */
const root = fileTempDir('vigil-mqtt-topics-');
const opened: OpenedDatabase[] = [];
const publishers: MqttPublisher[] = [];
test.after.always(async () => {
  for (const p of publishers) await p.close();
  for (const o of opened) o.close();
});

const pending = (db: OpenedDatabase['db']) =>
  (db.prepare('SELECT count(*) AS n FROM mqtt_person_topics_cleared').get() as { n: number }).n;

test('with MQTT off, the deleted persons noted for the MQTT output are not kept', async (t) => {
  const o = openDatabase(join(root, 'box'));
  opened.push(o);
  const note = o.db.prepare('INSERT INTO mqtt_person_topics_cleared (monitor_id, person_id) VALUES (?, ?)');
  note.run('door', 'deleted-before-start');
  const mq = configFromText('', null, {}).mqtt;
  const publisher = new MqttPublisher(
    o.db,
    new HistoryStore(o.db),
    mqttOptions(mq),
    () => [],
    pino({ level: 'silent' }),
    false,
  );
  publishers.push(publisher);
  publisher.start();
  t.is(pending(o.db), 0, 'noted before the start');
  note.run('door', 'deleted-while-running');
  await waitFor('the row noted while running is consumed', async () => pending(o.db) === 0 || undefined, 10_000, 100);
  t.is(publisher.status().queued, 0, 'nothing queued for a broker');
  t.is((o.db.prepare('SELECT count(*) AS n FROM mqtt_queue').get() as { n: number }).n, 0);
});
