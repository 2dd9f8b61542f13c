import { createRequire } from 'node:module';

// kafkajs's request queue, patched (patches/kafkajs@2.2.4.patch): unpatched, a queue with nothing pending armed a
// timer of a negative delay after every check, which Node runs after 1 ms and which armed the next: every idle
// producer and consumer connection woke its process about 700 times a second (kafkajs#1556, #1704).
const RequestQueue = createRequire(require.resolve('kafkajs'))('./src/network/requestQueue') as new (
  o: Record<string, unknown>,
) => { scheduleCheckPendingRequests(): void; checkPendingRequests(): void; pending: unknown[]; throttledUntil: number };

const quiet = { debug() {}, info() {}, warn() {}, error() {}, namespace: () => quiet };
const queue = () => new RequestQueue({ maxInFlightRequests: 1, requestTimeout: 30_000, clientId: 'test', broker: 'b:1', logger: quiet });

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

describe('kafkajs request queue (patched)', () => {
  it('arms no timer when nothing is pending and nothing is throttled', () => {
    const q = queue();
    q.checkPendingRequests();
    q.scheduleCheckPendingRequests();
    expect(jest.getTimerCount()).toBe(0);
  });

  it('still checks again when a throttle is to be waited out', () => {
    const q = queue();
    q.throttledUntil = Date.now() + 50;
    q.scheduleCheckPendingRequests();
    expect(jest.getTimerCount()).toBe(1);
  });
});
