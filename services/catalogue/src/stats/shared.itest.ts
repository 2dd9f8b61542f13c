import { randomUUID } from 'node:crypto';
import express from 'express';
import request from 'supertest';
import { buildRegistry, parseConfig } from '@gateway/config';
import { REDIS, REDIS_URL } from '@gateway/testing';
import { redisSharedAnswers } from '../shared-answers';
import { mountStats } from './routes';
import type { StatsStore } from './store';

const registry = buildRegistry(
  parseConfig({
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [
      {
        id: 'a/m',
        name: 'M',
        category: 'embedding',
        status: 'available',
        pricing: { prompt: '0.000001' },
        endpoints: [{ provider: 'sim', model: 'm' }],
      },
    ],
  }),
);

/** A replica whose own database says `tokens`: replicas that disagree show whether the answer is shared. */
function replica(tokens: number, shared: ReturnType<typeof redisSharedAnswers>, now: () => Date) {
  const store = { accounts: async () => 1, tokens: async () => tokens } as unknown as StatsStore;
  const app = express();
  const router = express.Router();
  mountStats(router, registry, store, { ttlMs: 300_000, now, shared });
  return app.use(router);
}

REDIS.describe('stats shared by the fleet’s replicas', () => {
  it('two replicas answer the same stats for the cache period, whichever computed them first', async () => {
    const prefix = `stats-test:${randomUUID().slice(0, 8)}:`;
    const a = redisSharedAnswers(REDIS_URL, prefix);
    const b = redisSharedAnswers(REDIS_URL, prefix);
    const first = await request(replica(100, a, () => new Date('2026-01-01T00:00:00Z'))).get('/v1/stats');
    const second = await request(replica(999, b, () => new Date('2026-01-01T00:01:00Z'))).get('/v1/stats');
    expect(first.body).toMatchObject({ tokens: 100, generatedAt: '2026-01-01T00:00:00.000Z' });
    expect(second.body).toEqual(first.body);
    await a.close();
    await b.close();
  });

  it('with Redis unreachable a replica still answers, from its own figures', async () => {
    const away = redisSharedAnswers('redis://127.0.0.1:1', 'nowhere:');
    const res = await request(replica(7, away, () => new Date())).get('/v1/stats');
    expect(res.status).toBe(200);
    expect(res.body.tokens).toBe(7);
    await away.close();
  });
});
