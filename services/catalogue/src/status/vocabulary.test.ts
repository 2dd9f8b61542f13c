import { DAY_STATES, dayState, OUTCOMES, overallStatus, STATUS_OF_OUTCOME, STATUSES } from './vocabulary';

describe('status vocabularies', () => {
  it('the wire has two separate tables: no day state is a status in another case', () => {
    expect(STATUSES).toEqual(['OPERATIONAL', 'DEGRADED', 'DOWN', 'UNCONFIGURED']);
    expect(DAY_STATES).toEqual(['operational', 'degraded', 'down', 'none']);
    expect(DAY_STATES.some((s) => (STATUSES as readonly string[]).includes(s))).toBe(false);
  });

  it('a measurement outcome becomes a status through its table only', () => {
    expect(OUTCOMES.map((o) => STATUS_OF_OUTCOME[o])).toEqual(['OPERATIONAL', 'DEGRADED', 'DOWN']);
  });

  it.each([
    [{ samples: 0, ok: 0, degraded: 0, down: 0 }, 'none'],
    [{ samples: 100, ok: 100, degraded: 0, down: 0 }, 'operational'],
    [{ samples: 100, ok: 99, degraded: 1, down: 0 }, 'operational'],
    [{ samples: 100, ok: 98, degraded: 1, down: 1 }, 'degraded'],
    [{ samples: 4, ok: 2, degraded: 0, down: 2 }, 'down'],
  ] as const)('day %o is %s', (counts, state) => expect(dayState(counts)).toBe(state));

  it('overall: DOWN when the api or everything is down, DEGRADED when anything is not operational', () => {
    const c = (api: string, rest: string) =>
      ['api', 'providers', 'storage', 'payments'].map((key) => ({ key, status: (key === 'api' ? api : rest) as never }));
    expect(overallStatus(c('OPERATIONAL', 'OPERATIONAL'))).toBe('OPERATIONAL');
    expect(overallStatus([...c('OPERATIONAL', 'OPERATIONAL').slice(0, 3), { key: 'payments', status: 'DOWN' }])).toBe('DEGRADED');
    expect(overallStatus(c('DOWN', 'OPERATIONAL'))).toBe('DOWN');
    expect(overallStatus(c('UNCONFIGURED', 'UNCONFIGURED'))).toBe('UNCONFIGURED');
    expect(overallStatus([...c('OPERATIONAL', 'UNCONFIGURED')])).toBe('OPERATIONAL');
  });
});
