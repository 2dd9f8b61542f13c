/**
 * `pnpm bench bus`: the memory bus's throughput on the settle path's shape, moved here from a unit test's
 * wall-clock bound. Publishes BENCH_BUS_EVENTS (20000) events over BENCH_BUS_KEYS (500) keys, one at a time as
 * request handlers do, to two consumer groups; reports publishes/s and the time until both groups have them all.
 */
import os from 'node:os';
import { createMemoryBus } from '@gateway/bus';

const EVENTS = Number(process.env.BENCH_BUS_EVENTS ?? 20_000);
const KEYS = Number(process.env.BENCH_BUS_KEYS ?? 500);
const GROUPS = ['settle', 'audit'];

async function once(): Promise<{ publishMs: number; deliverMs: number }> {
  const bus = createMemoryBus();
  let delivered = 0;
  let allDelivered!: () => void;
  const done = new Promise<void>((resolve) => (allDelivered = resolve));
  for (const group of GROUPS) {
    await bus.subscribe(group, ['bench'], async () => {
      if (++delivered === EVENTS * GROUPS.length) allDelivered();
    });
  }
  const started = performance.now();
  for (let i = 0; i < EVENTS; i++) await bus.publish('bench', { id: `e${i}`, type: 'bench.v1', key: `acct-${i % KEYS}`, data: i });
  const published = performance.now();
  await done;
  const finished = performance.now();
  await bus.close();
  return { publishMs: published - started, deliverMs: finished - started };
}

export async function benchBus(): Promise<string> {
  await once(); // warm-up: JIT and the first allocations of the queues
  const runs = [await once(), await once(), await once()];
  const rows = runs.map(
    (r, i) =>
      `| ${i + 1} | ${Math.round(EVENTS / (r.publishMs / 1000))} | ${r.deliverMs.toFixed(0)} | ${Math.round((EVENTS * GROUPS.length) / (r.deliverMs / 1000))} |`,
  );
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
  return [
    `\nmemory bus, ${machine}; ${EVENTS} events over ${KEYS} keys to ${GROUPS.length} groups`,
    '',
    '| run | publishes/s | ms until all delivered | deliveries/s |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
