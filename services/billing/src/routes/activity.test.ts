import { activityQuery, windowOf } from './activity';

describe('GET /v1/activity: the window', () => {
  const now = new Date('2026-11-28T00:30:00Z');

  it('the last `days` whole UTC days up to today, 30 by default', () => {
    expect(windowOf(activityQuery.parse({}), now)).toEqual({ from: new Date('2026-10-30T00:00:00Z'), until: new Date('2026-11-29T00:00:00Z') });
    expect(windowOf(activityQuery.parse({ days: '1' }), now)).toEqual({
      from: new Date('2026-11-28T00:00:00Z'),
      until: new Date('2026-11-29T00:00:00Z'),
    });
    expect(windowOf(activityQuery.parse({ days: '90' }), now).from).toEqual(new Date('2026-08-31T00:00:00Z'));
  });

  it('one day for `date`', () => {
    expect(windowOf(activityQuery.parse({ date: '2024-02-29' }), now)).toEqual({
      from: new Date('2024-02-29T00:00:00Z'),
      until: new Date('2024-03-01T00:00:00Z'),
    });
  });

  it('refuses a bad days or date, and both at once', () => {
    for (const bad of [
      { days: '0' },
      { days: '91' },
      { days: '2.5' },
      { days: ['1', '2'] },
      { date: '2025-02-29' },
      { date: '1969-12-31' },
      { date: '9999-12-31' },
      { days: '1', date: '2026-01-01' },
    ])
      expect({ bad, ok: activityQuery.safeParse(bad).success }).toEqual({ bad, ok: false });
  });
});
