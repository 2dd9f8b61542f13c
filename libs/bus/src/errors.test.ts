import { logBusError } from './errors';

describe('logBusError', () => {
  let lines: string[];
  let spy: jest.SpyInstance;
  beforeEach(() => {
    lines = [];
    spy = jest.spyOn(console, 'error').mockImplementation((line: string) => void lines.push(line));
  });
  afterEach(() => spy.mockRestore());

  const event = { id: 'h1:close', type: 'hold.close.v1', key: 'h1', data: { charge_nano: '5000000' } };

  it("writes a dropped event whole: the log line is the event's record", () => {
    logBusError(new Error('storage down'), { adapter: 'memory', action: 'dropped', group: 'billing', topic: 'billing.holds', event });
    expect(lines).toEqual([`[bus:memory] dropped: storage down group=billing topic=billing.holds event=h1:close record=${JSON.stringify(event)}`]);
  });

  it('names a retried event by id only, and leaves the quiet retries to the metric', () => {
    logBusError(new Error('storage down'), { adapter: 'memory', action: 'will-retry', group: 'billing', event });
    logBusError(new Error('storage down'), { adapter: 'memory', action: 'will-retry', group: 'billing', event, quiet: true });
    expect(lines).toEqual(['[bus:memory] will-retry: storage down group=billing event=h1:close']);
  });
});
