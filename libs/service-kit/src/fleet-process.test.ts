import express from 'express';
import request from 'supertest';
import { INTERNAL } from './context';
import { internalListener } from './fleet-process';
import { createLogger } from './logger';

const logger = createLogger('test', 'silent');
const env = { GATEWAY_INTERNAL_TOKEN: 'fleet-secret-0123456789abcdef' };
const answering = (path: string, body: string) => express.Router().get(path, (_req, res) => void res.json({ from: body }));

/** The listener every fleet service serves its routers on: which of them sit behind the internal token. */
describe('internalListener', () => {
  const listener = internalListener(logger, env, {
    internal: answering('/internal/ping', 'internal'),
    admin: answering('/admin/v1/x', 'admin'),
    public: answering('/v1/x', 'public'),
  });

  it('answers its own internal routes without the token (they check it themselves)', async () => {
    expect((await request(listener).get('/internal/ping')).body).toEqual({ from: 'internal' });
  });

  it('refuses the admin and public routes without the token, and serves them with it', async () => {
    for (const path of ['/admin/v1/x', '/v1/x']) {
      expect((await request(listener).get(path)).status).toBe(401);
      const res = await request(listener).get(path).set(INTERNAL.token, env.GATEWAY_INTERNAL_TOKEN);
      expect(res.status).toBe(200);
    }
  });
});
