import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadUntilSettled } from './measure';
import type { Target } from './targets';

/** A bench run on a gateway ends when its settles are applied, not at its last answer. */
describe('loadUntilSettled', () => {
  let server: http.Server;
  let url: string;

  beforeAll(async () => {
    server = http.createServer((_, res) => res.end('{}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  const target = (holding?: () => Promise<boolean>): Target => ({
    name: 'fleet',
    base: url,
    headers: {},
    pids: [],
    request: async () => undefined,
    stop: async () => undefined,
    ...(holding ? { holding } : {}),
  });
  const run = (t: Target) => loadUntilSettled(t, { url, method: 'GET', headers: {}, connections: 2, seconds: 1 }, false, { loadInProcess: true });

  it('counts the wait for the last settle in the run’s seconds and req/s', async () => {
    let polls = 0;
    const r = await run(target(async () => ++polls <= 4));
    expect(polls).toBe(5);
    // Four 20 ms sleeps, but a timer may fire a fraction of a millisecond early: only the wait's presence is asserted.
    expect(r.settledAfterMs).toBeGreaterThan(0);
    expect(r.seconds).toBeGreaterThan(0.9 + r.settledAfterMs! / 1000);
    expect(r.rps).toBeCloseTo(r.requests / r.seconds, 6);
  });

  it('leaves the run as measured when nothing is held at its end', async () => {
    const r = await run(target(async () => false));
    expect(r.settledAfterMs).toBe(0);
    expect(r.rps).toBeCloseTo(r.requests / r.seconds, 6);
  });

  it('leaves a target that holds no money (the direct upstream, Portkey) as measured', async () => {
    const r = await run(target());
    expect(r.settledAfterMs).toBeUndefined();
  });
});
