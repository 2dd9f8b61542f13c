import { billingService } from './gateway-service';
import type { BillingService } from './index';

/** A billing service whose calls are recorded, and whose database is down. */
function fakeBilling(calls: string[]): BillingService {
  const record = (name: string) => async () => void calls.push(name);
  return {
    start: record('start'),
    stop: record('stop'),
    ready: record('ready'),
    ping: async () => {
      calls.push('ping');
      throw new Error('database down');
    },
  } as unknown as BillingService;
}

describe('billingService', () => {
  it('in the fleet, is ready on its own state alone: its database is a shared dependency', async () => {
    const calls: string[] = [];
    await expect(billingService(fakeBilling(calls)).ready?.()).resolves.toBeUndefined();
    expect(calls).toEqual(['ready']);
  });

  it('embedded, on its own storage, is not ready while its database does not answer', async () => {
    const calls: string[] = [];
    await expect(billingService(fakeBilling(calls), { storageIsOwn: true }).ready?.()).rejects.toThrow('database down');
    expect(calls).toEqual(['ready', 'ping']);
  });

  it('stops the ledger in the close phase, after the bus has delivered the queued settles, never in the drain', async () => {
    const calls: string[] = [];
    const service = billingService(fakeBilling(calls));
    expect(service.drain).toBeUndefined();
    await service.close?.();
    expect(calls).toEqual(['stop']);
  });
});
