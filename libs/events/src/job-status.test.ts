// Through the package's entry, where routes and tools take these from.
import { JOB_STATUSES, JOB_STATUS_FILTERS, WIRE_JOB_STATUSES, storedStatusesOf, wireJobStatus } from './index';

describe('job status vocabularies', () => {
  it('shows queued and running as themselves on the wire, and every terminal status as COMPLETED', () => {
    expect(JOB_STATUSES.map(wireJobStatus)).toEqual(['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'COMPLETED', 'COMPLETED']);
  });

  it('reads a stored filter value as itself', () => {
    for (const s of JOB_STATUSES) expect(storedStatusesOf(s)).toEqual([s]);
  });

  it('reads a wire filter value as every stored status shown that way', () => {
    expect(storedStatusesOf('IN_QUEUE')).toEqual(['queued']);
    expect(storedStatusesOf('IN_PROGRESS')).toEqual(['running']);
    expect(storedStatusesOf('COMPLETED')).toEqual(['succeeded', 'failed', 'canceled']);
  });

  it('takes both vocabularies as filters, and every filter stands for at least one stored status', () => {
    expect(JOB_STATUS_FILTERS).toEqual([...JOB_STATUSES, ...WIRE_JOB_STATUSES]);
    for (const f of JOB_STATUS_FILTERS) {
      const stored = storedStatusesOf(f);
      expect(stored.length).toBeGreaterThan(0);
      for (const s of stored) expect(wireJobStatus(s) === f || s === f).toBe(true);
    }
  });
});
