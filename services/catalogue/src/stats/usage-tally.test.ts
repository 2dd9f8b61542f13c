import { createLogger } from '@gateway/service-kit';
import type { StatsStore } from './store';
import { UsageTally } from './usage-tally';

const quiet = createLogger('test', 'silent');
const written: number[] = [];
let fail = false;
const store = {
  usageRecordedMany: async (batch: unknown[]) => {
    if (fail) throw new Error('down');
    written.push(batch.length);
  },
} as unknown as StatsStore;

beforeEach(() => {
  jest.useFakeTimers();
  written.length = 0;
  fail = false;
});
afterEach(() => jest.useRealTimers());

describe('UsageTally', () => {
  it('sets no timer while nothing is pending, so an idle gateway is never woken', async () => {
    const tally = new UsageTally(store, quiet);
    tally.start();
    expect(jest.getTimerCount()).toBe(0);
    tally.add('e1', new Date(), 3);
    tally.add('e2', new Date(), 4);
    expect(jest.getTimerCount()).toBe(1);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(written).toEqual([2]);
    expect(jest.getTimerCount()).toBe(0);
    await tally.stop();
  });

  it('keeps a failed write for a second later, and writes what stop finds', async () => {
    const tally = new UsageTally(store, quiet);
    tally.start();
    fail = true;
    tally.add('e1', new Date(), 3);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(written).toEqual([]);
    expect(jest.getTimerCount()).toBe(1);
    fail = false;
    tally.add('e2', new Date(), 1);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(written).toEqual([2]);
    tally.add('e3', new Date(), 1);
    await tally.stop();
    expect(written).toEqual([2, 1]);
    expect(jest.getTimerCount()).toBe(0);
  });
});
