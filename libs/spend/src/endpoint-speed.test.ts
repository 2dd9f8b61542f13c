import { Circuits } from './circuits';
import { EndpointSpeed } from './endpoint-speed';

describe('EndpointSpeed', () => {
  it('keeps a moving average in which the newest call weighs 0.3', () => {
    const s = new EndpointSpeed();
    expect(s.of('p/a')).toEqual({});
    s.latency('p/a', 100);
    s.latency('p/a', 200);
    expect(s.of('p/a').latencyMs).toBe(130);
    s.throughput('p/a', 50, 1000);
    s.throughput('p/a', 150, 1000);
    expect(s.of('p/a').tokensPerSecond).toBe(80);
  });

  it('ignores calls that say nothing about throughput (no tokens, no time)', () => {
    const s = new EndpointSpeed();
    s.throughput('p/a', 0, 1000);
    s.throughput('p/a', 10, 0);
    expect(s.of('p/a')).toEqual({});
  });

  it("is fed by the circuits' successes, per endpoint", () => {
    const c = new Circuits();
    c.success('p/a', 40);
    c.success('p/b');
    c.failure('p/a');
    expect(c.speed.of('p/a')).toEqual({ latencyMs: 40 });
    expect(c.speed.of('p/b')).toEqual({});
  });
});
