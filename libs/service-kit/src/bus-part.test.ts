import { busPart } from './bus-part';
import type { Lifecycle } from './lifecycle';
import { createLogger } from './logger';
import { startParts } from './run-parts';

const logger = createLogger('test', 'silent');

/** A bus whose consumers stop for good when `stopped` is set, writing its close into `log`. */
function fakeBus(log: string[]) {
  const bus = {
    stopped: undefined as string | undefined,
    checkConsumers() {
      if (bus.stopped) throw new Error(bus.stopped);
    },
    close: async () => void log.push('close bus'),
  };
  return bus;
}

const service = (log: string[]): Lifecycle => ({
  name: 'service',
  drain: async () => void log.push('drain service'),
  close: async () => void log.push('close service'),
});

describe('the bus part', () => {
  it('is ready while its consumers run, and not once one has stopped for good', async () => {
    const bus = fakeBus([]);
    const started = await startParts([busPart(bus, 'close')], logger);
    await expect(started.ready()).resolves.toBeUndefined();
    bus.stopped = 'consumer of group billing crashed and stopped';
    await expect(started.ready()).rejects.toThrow('consumer of group billing crashed and stopped');
  });

  it('closes in the drain phase when asked: before the services after it close', async () => {
    const log: string[] = [];
    await (await startParts([busPart(fakeBus(log), 'drain'), service(log)], logger)).stop();
    expect(log).toEqual(['drain service', 'close bus', 'close service']);
  });

  it('closes in the close phase when asked: after the services after it have closed', async () => {
    const log: string[] = [];
    await (await startParts([busPart(fakeBus(log), 'close'), service(log)], logger)).stop();
    expect(log).toEqual(['drain service', 'close service', 'close bus']);
  });
});
