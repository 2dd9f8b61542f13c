import { CPU_GROUPS, type CpuGroup, type Leg, type LegRun, LEGS, hopsReport, layers } from './hops';
import type { LatencySummary } from './stats';

const summary = (p50: number, count = 1000): LatencySummary => ({ count, p50, p99: p50 * 3, mean: p50 * 1.2, max: p50 * 10 });
// Each group's CPU per call: the leg's p50, plus the group's place in the list.
const cpuOf = (p50: number) => Object.fromEntries(CPU_GROUPS.map((g, i) => [g, p50 + i])) as Record<CpuGroup, number>;
const round = (p50: Record<Leg, number>): Record<Leg, LegRun> =>
  Object.fromEntries(LEGS.map((l) => [l, { latency: summary(p50[l]), cpuMsPerCall: cpuOf(p50[l]) }])) as Record<Leg, LegRun>;

const legs: Record<Leg, number> = {
  upstream: 0.1,
  'redis ping': 0.04,
  'postgres select 1': 0.05,
  place_hold: 0.75,
  'billing hold': 1.25,
  text: 2.5,
  edge: 3.25,
};

describe('pnpm bench hops: what each layer of the call adds', () => {
  it('takes each layer as its leg less the legs it contains', () => {
    expect(layers(legs).map((l) => Number(l.ms.toFixed(3)))).toEqual([0.04, 0.7, 0.5, 1.15, 0.75]);
  });

  it('reports each leg by the median of its rounds, and lists every round', () => {
    const slower = Object.fromEntries(LEGS.map((l) => [l, legs[l] * 2])) as Record<Leg, number>;
    const faster = Object.fromEntries(LEGS.map((l) => [l, legs[l] / 2])) as Record<Leg, number>;
    const report = hopsReport([round(slower), round(legs), round(faster)]);
    // The middle round is the median of three, whatever their order.
    expect(report).toContain('| edge | 3.250 | 3.900 | 9.750 | 1000 | 6.500, 3.250, 1.625 | 3.25 / 4.25 / 5.25 / 6.25 / 7.25 / 8.25 / 9.25 |');
    expect(report).toContain('| the edge (key, meter, one more hop), over text | 0.750 |');
    for (const leg of LEGS) expect(report).toContain(`| ${leg} |`);
  });
});
