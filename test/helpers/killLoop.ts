import { seededRandom } from '../../bench/seededRandom.js';
import { face } from './daemon.js';
import type { DaemonProcess } from './daemonProcess.js';

/**
 * Writers run against the daemon (JSON collection creates and multipart person registrations with real
 * inference) while it is SIGKILLed at a random moment; after each restart, every write that was
 * acknowledged (201) must be there.
 */
export async function killLoop(
  daemon: DaemonProcess,
  rounds: number,
  seed = 5,
): Promise<{ acknowledged: number; lost: string[]; failedDuringKill: number }> {
  const rnd = seededRandom(seed);
  const acked: { kind: 'collection' | 'person'; id: string }[] = [];
  let failed = 0;
  const auth = daemon.auth;
  await fetch(`${daemon.url}/v1/collections`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'people', name: 'people' }),
  });
  const image = face('identities/obama/1.jpg');
  let n = 0;
  for (let round = 0; round < rounds; round++) {
    let stop = false;
    const writer = async (kind: 'collection' | 'person') => {
      while (!stop) {
        const id = `${kind[0]}${round}-${n++}`;
        try {
          let res: Response;
          if (kind === 'collection') {
            res = await fetch(`${daemon.url}/v1/collections`, {
              method: 'POST',
              headers: { ...auth, 'content-type': 'application/json' },
              body: JSON.stringify({ id, name: id }),
            });
          } else {
            const fd = new FormData();
            fd.append('id', id);
            fd.append('images', new Blob([image]), 'a.jpg');
            res = await fetch(`${daemon.url}/v1/collections/people/persons`, {
              method: 'POST',
              headers: auth,
              body: fd,
            });
          }
          await res.text();
          if (res.status === 201) acked.push({ kind, id });
        } catch {
          failed++;
          return;
        }
      }
    };
    const writers = [writer('collection'), writer('collection'), writer('person'), writer('person')];
    await new Promise((r) => setTimeout(r, 300 + rnd() * 1200));
    await daemon.kill();
    stop = true;
    await Promise.all(writers);
    await daemon.start();
  }
  const lost: string[] = [];
  for (const w of acked) {
    const path = w.kind === 'collection' ? `/v1/collections/${w.id}` : `/v1/collections/people/persons/${w.id}`;
    const res = await fetch(daemon.url + path, { headers: auth });
    await res.text();
    if (res.status !== 200) lost.push(`${w.kind} ${w.id} (${res.status})`);
  }
  return { acknowledged: acked.length, lost, failedDuringKill: failed };
}
