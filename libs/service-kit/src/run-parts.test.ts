import http from 'node:http';
import type { Lifecycle } from './lifecycle';
import { inStartOrder } from './lifecycle';
import { createLogger } from './logger';
import { startParts } from './run-parts';
import { reachableUrl, startAndServe } from './serve-parts';
import type { Served } from './serve';

const logger = createLogger('test', 'silent');

/** A part that writes each hook it runs into `log`, and throws in the phases named in `fails`. */
function part(name: string, log: string[], fails: (keyof Lifecycle)[] = []): Lifecycle {
  const step = (phase: keyof Lifecycle) => async () => {
    log.push(`${phase} ${name}`);
    if (fails.includes(phase)) throw new Error(`${name} ${phase} failed`);
  };
  return {
    name,
    start: step('start'),
    ready: step('ready'),
    drain: step('drain'),
    close: step('close'),
    listening: (url) => void log.push(`listening ${name} ${url}`),
    preClose: () => void log.push(`preClose ${name}`),
  };
}

describe('startParts', () => {
  it('starts and readies in the order given, and stops in reverse: every drain, then every close', async () => {
    const log: string[] = [];
    const started = await startParts([part('a', log), part('b', log), { name: 'c' }], logger);
    started.listening('http://127.0.0.1:1');
    await started.ready();
    started.preClose();
    await started.stop();
    expect(log).toEqual([
      'start a',
      'start b',
      'listening a http://127.0.0.1:1',
      'listening b http://127.0.0.1:1',
      'ready a',
      'ready b',
      'preClose b',
      'preClose a',
      'drain b',
      'drain a',
      'close b',
      'close a',
    ]);
  });

  it('stops what had started, in reverse, when a start fails, and never the part that failed or those after it', async () => {
    const log: string[] = [];
    const parts = [part('a', log), part('b', log), part('c', log, ['start']), part('d', log)];
    await expect(startParts(parts, logger)).rejects.toThrow('c start failed');
    expect(log).toEqual(['start a', 'start b', 'start c', 'drain b', 'drain a', 'close b', 'close a']);
  });

  it('runs every other stop step when one throws, then throws the first failure', async () => {
    const log: string[] = [];
    const started = await startParts([part('a', log), part('b', log, ['drain', 'close']), part('c', log, ['close'])], logger);
    log.length = 0;
    await expect(started.stop()).rejects.toThrow('b drain failed');
    expect(log).toEqual(['drain c', 'drain b', 'drain a', 'close c', 'close b', 'close a']);
  });

  it('answers readiness with the first part that is not ready', async () => {
    const log: string[] = [];
    const started = await startParts([part('a', log, ['ready']), part('b', log)], logger);
    await expect(started.ready()).rejects.toThrow('a ready failed');
  });
});

describe('startAndServe', () => {
  const listen = (hooks: { ready: () => Promise<void>; onDrained: () => Promise<void> }, log: string[]): Promise<Served> => {
    const server = http.createServer();
    return new Promise((resolve) =>
      server.listen(0, '127.0.0.1', () => {
        log.push('listen');
        resolve({
          server,
          port: (server.address() as { port: number }).port,
          metricsPort: 0,
          shutdown: async () => {
            log.push('shutdown');
            await new Promise((r) => server.close(r));
            await hooks.onDrained();
          },
        });
      }),
    );
  };

  it('listens once its parts have started, tells them where, and on stop ends streams before the drain', async () => {
    const log: string[] = [];
    const running = await startAndServe([part('a', log)], { logger, host: '0.0.0.0', listen: (hooks) => listen(hooks, log) });
    expect(running.url).toBe(`http://127.0.0.1:${running.served.port}`);
    await running.stop();
    expect(log).toEqual(['start a', 'listen', `listening a ${running.url}`, 'preClose a', 'shutdown', 'drain a', 'close a']);
  });

  it('stops the parts when the listener cannot open', async () => {
    const log: string[] = [];
    const listenFails = async () => {
      throw new Error('EADDRINUSE');
    };
    await expect(startAndServe([part('a', log)], { logger, host: '127.0.0.1', listen: listenFails })).rejects.toThrow('EADDRINUSE');
    expect(log).toEqual(['start a', 'drain a', 'close a']);
  });

  it('reaches a wildcard bind address on loopback, and brackets IPv6', () => {
    expect(reachableUrl('0.0.0.0', 80)).toBe('http://127.0.0.1:80');
    expect(reachableUrl('::', 80)).toBe('http://[::1]:80');
    expect(reachableUrl('fd00::1', 80)).toBe('http://[fd00::1]:80');
    expect(reachableUrl('localhost', 80)).toBe('http://localhost:80');
  });
});

describe('inStartOrder', () => {
  it('orders services by the table, whatever order they are given in', () => {
    const names = inStartOrder([{ name: 'jobs' }, { name: 'mcp' }, { name: 'billing' }, { name: 'catalogue' }, { name: 'media' }]).map((s) => s.name);
    expect(names).toEqual(['catalogue', 'billing', 'media', 'jobs', 'mcp']);
  });
});
