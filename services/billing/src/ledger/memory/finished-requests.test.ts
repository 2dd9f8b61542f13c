import fc from 'fast-check';
import { BUCKET_MS, FinishedRequests } from './finished-requests';

describe('FinishedRequests', () => {
  it('remembers each (account, request) pair from when it finished until at least the cut, and at most a bucket after', () => {
    const step = fc.oneof(
      fc.record({
        op: fc.constant('add' as const),
        account: fc.constantFrom('a', 'b', 'c'),
        request: fc.constantFrom('r1', 'r2', 'r3', 'r4'),
        dt: fc.nat(3_000),
      }),
      fc.record({ op: fc.constant('forget' as const), keep: fc.nat(20_000) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const set = new FinishedRequests();
        // The reference: every pair with the times it finished at, and the latest cut asked for.
        const added: { account: string; request: string; at: number }[] = [];
        let now = 1_000_000;
        let cut = 0;
        for (const s of steps) {
          if (s.op === 'add') {
            now += s.dt;
            set.add(s.account, s.request, now);
            added.push({ account: s.account, request: s.request, at: now });
          } else {
            cut = Math.max(cut, now - s.keep);
            set.forgetBefore(now - s.keep);
          }
          for (const account of ['a', 'b', 'c'])
            for (const request of ['r1', 'r2', 'r3', 'r4']) {
              const times = added.filter((x) => x.account === account && x.request === request).map((x) => x.at);
              const latest = times.length ? Math.max(...times) : undefined;
              const has = set.has(account, request);
              if (latest === undefined) expect(has).toBe(false);
              else if (latest >= cut) expect(has).toBe(true);
              else if (latest < cut - BUCKET_MS) expect(has).toBe(false);
            }
        }
      }),
    );
  });

  it('keeps one request id finished under two accounts apart', () => {
    const set = new FinishedRequests();
    set.add('acct_a', 'req_1', 0);
    expect(set.has('acct_b', 'req_1')).toBe(false);
    set.add('acct_b', 'req_1', 1);
    set.add('acct_b', 'req_1', 2);
    expect([set.has('acct_a', 'req_1'), set.has('acct_b', 'req_1'), set.has('acct_c', 'req_1')]).toEqual([true, true, false]);
  });
});
