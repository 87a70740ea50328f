// Owns the NATS publish micro-benchmark: CPU per message of a paced nats.js publish, one write per message against many per write.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { connect } from 'nats';
import { natsServerBinary } from '../test/helpers/nats.js';
import { startNats } from './cluster.js';
import { flags, main, num } from './lib/cli.js';
import { isMain, progress } from './lib/report.js';

const USAGE = `node --import=tsx bench/nats-publish.ts [--seconds S]
The floor of the relay's cost per frame on this machine: a process publishing 60-byte messages at 400/s, one per
timer tick (one socket write each, as the owner's fan-out at a paced rate), against 200 per tick at 2 ticks/s, with
a subscriber in another process; and a process that only wakes for the same 400 ticks/s. Needs nats-server.`;

const SELF = fileURLToPath(import.meta.url);

/** Child: subscribes, says ready, and answers the count it received when asked. */
async function subscriber(url: string): Promise<void> {
  const nc = await connect({ servers: url });
  let received = 0;
  nc.subscribe('bench.publish', { callback: () => received++ });
  await nc.flush();
  process.send?.('ready');
  process.once('message', () => {
    process.send?.(received);
    void nc.close().then(() => process.exit(0));
  });
}

async function publisher(url: string, ticksPerSecond: number, perTick: number, seconds: number): Promise<void> {
  const child = fork(SELF, ['--subscriber', url], { execArgv: ['--import=tsx'] });
  await new Promise((resolve) => child.once('message', resolve));
  const nc = perTick === 0 ? undefined : await connect({ servers: url });
  const payload = new Uint8Array(60);
  let sent = 0;
  let ticks = 0;
  const before = process.cpuUsage();
  const timer = setInterval(() => {
    ticks++;
    for (let i = 0; i < perTick; i++, sent++) nc?.publish('bench.publish', payload);
  }, 1000 / ticksPerSecond);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  clearInterval(timer);
  const cpu = process.cpuUsage(before);
  child.send('count');
  const received = await new Promise<number>((resolve) => child.once('message', (count: number) => resolve(count)));
  await nc?.close();
  const micros = cpu.user + cpu.system;
  const what = perTick === 0 ? `${ticks} timer ticks, no publish: ${(micros / ticks).toFixed(1)} µs CPU per tick` : `${perTick} per tick at ${ticksPerSecond} ticks/s: ${sent} sent, ${received} received; ${(micros / sent).toFixed(1)} µs CPU per message (system ${(cpu.system / sent).toFixed(1)})`;
  progress(what);
}

if (isMain(import.meta.url)) {
  if (process.argv[2] === '--subscriber') void subscriber(process.argv[3] ?? '');
  else
    main(async () => {
      const values = flags(USAGE, { seconds: { type: 'string' } });
      const seconds = num(values, 'seconds', 5, 1, 60);
      if (natsServerBinary() === undefined) {
        progress('nats publish bench skipped: nats-server is not installed (apt-get install nats-server)');
        return;
      }
      const nats = await startNats();
      try {
        await publisher(nats.url, 400, 0, seconds);
        await publisher(nats.url, 400, 1, seconds);
        await publisher(nats.url, 2, 200, seconds);
      } finally {
        await nats.stop();
      }
    });
}
