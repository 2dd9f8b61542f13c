import express from 'express';
import request from 'supertest';
import { createLogger } from '@gateway/service-kit';
import { CONTENT_SECURITY_POLICY } from '@gateway/web-pages';
import type { StatusMonitor } from './monitor';
import { mountStatus } from './routes';
import type { StatusStore } from './store';

/** A store holding one api measurement and one day of history: what the two routes read, without a database. */
function store(reads: { n: number }): StatusStore {
  return {
    async latest() {
      reads.n++;
      return new Map([['api', { at: '2026-11-28T01:00:00.000Z', outcome: 'degraded' as const, latencyMs: 2500 }]]);
    },
    async days() {
      return new Map([['api', new Map([['2026-11-28', { samples: 10, ok: 9, degraded: 1, down: 0 }]])]]);
    },
  } as unknown as StatusStore;
}

describe('GET /status, the status page', () => {
  const reads = { n: 0 };
  const app = express();
  const r = express.Router();
  // A running monitor with nothing newer of its own than the store's.
  const monitor = { latest: new Map() } as unknown as StatusMonitor;
  mountStatus(r, {
    store: store(reads),
    monitor,
    now: () => new Date('2026-11-28T01:00:30.000Z'),
    ttlMs: 60_000,
    logger: createLogger('test', 'silent'),
  });
  app.use(r);

  it('is HTML rendered from the very answer of /v1/status, with the page headers', async () => {
    const json = await request(app).get('/v1/status');
    const page = await request(app).get('/status');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['cache-control']).toBe(json.headers['cache-control']);
    // One built answer serves both (built once in the cache's lifetime).
    expect(reads.n).toBe(1);
    expect(page.text).toContain(`<time datetime="${json.body.generatedAt}">`);
    expect(json.body.components.map((c: { name: string }) => c.name)).toEqual(['API', 'Model providers', 'Storage', 'Payments']);
    for (const c of json.body.components) expect(page.text).toContain(`<h2 id="c-${c.key}">${c.name}</h2>`);
    expect(page.text).toContain('<span class="status s-degraded"><span class="symbol" aria-hidden="true">!</span> Degraded</span>');
    expect(page.text).toContain('title="2026-11-28: degraded, 90% uptime (10 samples)"');
    expect(page.text.match(/<li class="day /g)).toHaveLength(4 * 90);
  });
});
