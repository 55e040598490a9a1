import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DAEMON_NODE_FLAGS } from '../../src/system/nodeFlags.js';
import { REPO } from '../helpers/daemon.js';

// The daemon's V8 flags are written in three places that start it: the systemd unit, the dev script and
// (from the constant) the benches. They must stay the same.
test('the systemd unit and scripts/run-dev.sh start node with DAEMON_NODE_FLAGS', (t) => {
  const flags = DAEMON_NODE_FLAGS.join(' ');
  t.true(flags.length > 0);
  const unit = readFileSync(join(REPO, 'systemd/vigil.service'), 'utf8');
  t.regex(
    unit,
    new RegExp(`^ExecStart=/usr/lib/vigil/node/bin/node ${flags} /usr/lib/vigil/app/dist/cli/main\\.js serve$`, 'm'),
  );
  const dev = readFileSync(join(REPO, 'scripts/run-dev.sh'), 'utf8');
  t.regex(dev, new RegExp(`^exec node ${flags} dist/cli/main\\.js serve `, 'm'));
});
