/** The arithmetic behind `pnpm bench capacity` (capacity-delta.ts): what a wrong delta would misreport. */
import { diff, infoField, netOfIdle, parseCommandstats, parseRows, perRequest } from './capacity-delta';

describe('capacity deltas', () => {
  it('subtracts name by name, counting a counter first seen after the run from 0', () => {
    expect(diff({ 'cpu edge': 100, 'redis xadd': 4 }, { 'cpu edge': 160, 'redis xadd': 10, 'redis xack': 3 })).toEqual({
      'cpu edge': 60,
      'redis xadd': 6,
      'redis xack': 3,
    });
  });

  it('reports a counter that went backwards as NaN, never as a negative cost', () => {
    expect(diff({ 'cpu text': 500 }, { 'cpu text': 20 })['cpu text']).toBeNaN();
  });

  it('divides by the requests counted, and refuses zero of them', () => {
    expect(perRequest({ 'pg xact_commit': 6000, 'wal bytes': 3 }, 2000)).toEqual({ 'pg xact_commit': 3, 'wal bytes': 0.0015 });
    expect(() => perRequest({ x: 1 }, 0)).toThrow('per request over 0 requests');
  });

  it("reads Redis's calls per command and a numeric INFO field", () => {
    const info = [
      '# Stats',
      'total_net_input_bytes:12345',
      '# Commandstats',
      'cmdstat_xadd:calls=12,usec=80,usec_per_call=6.67,rejected_calls=0,failed_calls=0',
      'cmdstat_client|setname:calls=3,usec=1,usec_per_call=0.33,rejected_calls=0,failed_calls=0',
      '',
    ].join('\r\n');
    expect(parseCommandstats(info)).toEqual({ xadd: 12, 'client|setname': 3 });
    expect(infoField(info, 'total_net_input_bytes')).toBe(12345);
    expect(infoField(info, 'total_net_output_bytes')).toBe(0);
  });

  it("names psql's rows by prefix, row and column, and refuses a row of the wrong width", () => {
    expect(parseRows('billing.holds|5|2\npublic.keys|0|1\n', 'table ', ['ins', 'upd'])).toEqual({
      'table billing.holds ins': 5,
      'table billing.holds upd': 2,
      'table public.keys ins': 0,
      'table public.keys upd': 1,
    });
    expect(() => parseRows('a|1\n', 't ', ['ins', 'upd'])).toThrow('expected 2 values');
  });

  it("subtracts each process's idle rate over the busy span, never below 0, and only from CPU counters", () => {
    // text idled at 10 ms per second and burned 900 ms over 20 s of load: 200 ms of that was idle.
    expect(netOfIdle({ 'cpu text': 100, 'cpu mcp': 50 }, 10_000, { 'cpu text': 900, 'cpu mcp': 60, 'pg xact_commit': 5 }, 20_000)).toEqual({
      'net cpu text': 700,
      'net cpu mcp': 0,
    });
    expect(() => netOfIdle({}, 0, {}, 1)).toThrow('an idle baseline over 0 ms');
  });
});
