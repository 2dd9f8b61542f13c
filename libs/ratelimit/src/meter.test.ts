import { createMemoryMeter } from './memory';

describe('memory meter', () => {
  // 10:00:07.250 UTC on some day: inside a 60 s window that started at 10:00:00.
  const WINDOW_START = Date.UTC(2026, 0, 5, 10, 0, 0);
  let clock: number;
  const meter = () => createMemoryMeter({ now: () => clock });
  beforeEach(() => (clock = WINDOW_START + 7_250));

  it('allows up to the limit, then refuses, with remaining counting down and never below zero', async () => {
    const m = meter();
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await m.hit('acct', 3, 60_000));
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, false, false]);
    expect(results.map((r) => r.remaining)).toEqual([2, 1, 0, 0, 0]);
    expect(results.every((r) => r.limit === 3)).toBe(true);
  });

  it('counts refused hits too, so hammering does not help', async () => {
    const m = meter();
    for (let i = 0; i < 10; i++) await m.hit('acct', 2, 60_000);
    // Raising the limit mid-window shows the true count: 10 hits so far, the 11th is still over a limit of 10.
    expect(await m.hit('acct', 10, 60_000)).toMatchObject({ allowed: false, remaining: 0 });
    expect(await m.hit('acct', 12, 60_000)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('reports the aligned window end as resetAt and the wait as retryAfter', async () => {
    const r = await meter().hit('acct', 1, 60_000);
    expect(r.resetAt).toBe((WINDOW_START + 60_000) / 1000);
    expect(r.retryAfter).toBe(53); // 52.75 s left, rounded up
  });

  it('never says retryAfter 0, even in the last millisecond of a window', async () => {
    clock = WINDOW_START + 59_999;
    const r = await meter().hit('acct', 1, 60_000);
    expect(r.retryAfter).toBe(1);
    expect(r.resetAt).toBe((WINDOW_START + 60_000) / 1000);
  });

  it('keeps accounts independent', async () => {
    const m = meter();
    await m.hit('a', 1, 60_000);
    expect((await m.hit('a', 1, 60_000)).allowed).toBe(false);
    expect(await m.hit('b', 1, 60_000)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('refills when the aligned window rolls over, not a window length after the first hit', async () => {
    const m = meter();
    await m.hit('acct', 1, 60_000);
    expect((await m.hit('acct', 1, 60_000)).allowed).toBe(false);
    clock = WINDOW_START + 59_999;
    expect((await m.hit('acct', 1, 60_000)).allowed).toBe(false);
    clock = WINDOW_START + 60_000;
    const r = await m.hit('acct', 1, 60_000);
    expect(r).toMatchObject({ allowed: true, remaining: 0, resetAt: (WINDOW_START + 120_000) / 1000, retryAfter: 60 });
  });

  it('works with jest fake timers driving Date.now', async () => {
    jest.useFakeTimers({ now: WINDOW_START + 1_000 });
    try {
      const m = createMemoryMeter();
      expect((await m.hit('acct', 1, 1_000)).allowed).toBe(true);
      expect((await m.hit('acct', 1, 1_000)).allowed).toBe(false);
      jest.advanceTimersByTime(1_000);
      expect((await m.hit('acct', 1, 1_000)).allowed).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });

  it('forgets accounts whose window has ended, on the periodic sweep', async () => {
    const m = createMemoryMeter({ now: () => clock, pruneEveryMs: 10_000 });
    await m.hit('quiet', 1, 1_000);
    await m.hit('busy', 1, 60_000);
    expect(m.accounts).toBe(2);
    clock += 5_000;
    await m.hit('busy', 1, 60_000);
    expect(m.accounts).toBe(2); // not swept yet: sweeps are occasional, not per hit
    clock += 5_000;
    await m.hit('busy', 1, 60_000);
    expect(m.accounts).toBe(1);
  });

  it('refuses nonsense arguments loudly', async () => {
    const m = meter();
    await expect(m.hit('', 1, 1_000)).rejects.toThrow(/accountId/);
    await expect(m.hit('a', -1, 1_000)).rejects.toThrow(/limit/);
    await expect(m.hit('a', 1, 0)).rejects.toThrow(/windowMs/);
    await expect(m.hit('a', 1.5, 1_000)).rejects.toThrow(/limit/);
  });

  it('refuses everything at limit 0', async () => {
    expect(await meter().hit('acct', 0, 60_000)).toMatchObject({ allowed: false, remaining: 0, limit: 0 });
  });
});
