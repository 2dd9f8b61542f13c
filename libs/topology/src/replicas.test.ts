import net from 'node:net';
import fc from 'fast-check';
import { ReplicaSet, addressList, neverReached } from './replicas';

const refused = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

describe('addressList', () => {
  it('reads a comma-separated list of base URLs, blanks and trailing slashes dropped', () => {
    expect(addressList(' http://a:1/ ,http://b:2,, ')).toEqual(['http://a:1', 'http://b:2']);
    expect(addressList('http://billing:8081')).toEqual(['http://billing:8081']);
  });
});

describe('neverReached', () => {
  it('is true only for failures that happen before the connection opened, found through causes', () => {
    expect(neverReached(refused())).toBe(true);
    expect(neverReached(new TypeError('fetch failed', { cause: refused() }))).toBe(true);
    expect(neverReached(Object.assign(new Error('t'), { code: 'UND_ERR_CONNECT_TIMEOUT' }))).toBe(true);
    expect(neverReached(new AggregateError([refused(), refused()]))).toBe(true);
    expect(neverReached(new AggregateError([refused(), Object.assign(new Error('r'), { code: 'ECONNRESET' })]))).toBe(false);
    expect(neverReached(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBe(false);
    expect(neverReached(Object.assign(new Error('closed'), { code: 'UND_ERR_SOCKET' }))).toBe(false);
    expect(neverReached(undefined)).toBe(false);
  });

  it('recognises what a connection says when nothing listens on the port', async () => {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((r) => server.close(r));
    const err = await new Promise((resolve) => net.connect(port, '127.0.0.1').once('error', resolve));
    expect(neverReached(err)).toBe(true);
    // fetch wraps it as its cause.
    expect(neverReached(await fetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e))).toBe(true);
  });
});

describe('ReplicaSet', () => {
  it('goes round-robin over its targets', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 40 }), (n, calls) => {
        const set = new ReplicaSet(Array.from({ length: n }, (_, i) => i));
        const counts = Array(n).fill(0);
        for (let i = 0; i < calls; i++) counts[set.next()]++;
        // Spread evenly: no target gets more than one call above another.
        return Math.max(...counts) - Math.min(...counts) <= 1;
      }),
    );
  });

  it('leaves an ejected target out until its time is up, and answers even when every target is ejected', () => {
    let now = 0;
    const set = new ReplicaSet(['a', 'b', 'c'], { ejectMs: 100, now: () => now });
    set.eject('b');
    expect([set.next(), set.next(), set.next(), set.next()]).toEqual(['a', 'c', 'a', 'c']);
    now = 50;
    set.eject('a');
    set.eject('c');
    // All out: the one whose ejection ends first (b, at 100).
    expect(set.next()).toBe('b');
    now = 100;
    expect(set.live('b')).toBe(true);
    expect(set.live('a')).toBe(false);
    now = 150;
    expect(new Set([set.next(), set.next(), set.next()])).toEqual(new Set(['a', 'b', 'c']));
  });

  it('sends a call to the next target only when the refused one never got it, each target at most once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom('up', 'refuses', 'fails'), { minLength: 1, maxLength: 5 }), async (states) => {
        const set = new ReplicaSet(states.map((_, i) => i));
        const attempts: number[] = [];
        const outcome = await set
          .call(async (i) => {
            attempts.push(i);
            if (states[i] === 'refuses') throw refused();
            if (states[i] === 'fails') throw new Error('died mid-call');
            return i;
          })
          .then(
            (i) => ({ ok: i }),
            (e: Error) => ({ err: e }),
          );
        // Never the same target twice, and every attempt but the last was a refusal.
        expect(new Set(attempts).size).toBe(attempts.length);
        for (const i of attempts.slice(0, -1)) expect(states[i]).toBe('refuses');
        const last = attempts[attempts.length - 1];
        if (states[last] === 'up') expect(outcome).toEqual({ ok: last });
        else if (states[last] === 'fails') expect('err' in outcome && outcome.err.message).toBe('died mid-call');
        // A refusal ends the call only once every target was tried.
        else expect(attempts.length).toBe(states.length);
        // Whoever refused is out of the turn now.
        for (const i of attempts) expect(set.live(i)).toBe(states[i] !== 'refuses');
      }),
    );
  });

  it('counts an address listed twice as one replica', async () => {
    const set = new ReplicaSet(['a', 'a']);
    let calls = 0;
    await expect(
      set.call(async () => {
        calls++;
        throw refused();
      }),
    ).rejects.toThrow('ECONNREFUSED');
    expect(calls).toBe(1);
  });
});
