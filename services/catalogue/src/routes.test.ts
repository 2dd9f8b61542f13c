import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { errorHandler } from '@gateway/errors';
import { createCatalogueService } from './index';
import { registryOf } from './testing/models';

/** The catalogue's router alone over a local listener: what every public route sends, before the edge adds its headers. */
describe('catalogue routes', () => {
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    const registry = registryOf(
      { id: 'acme/chat', category: 'text', pricing: { prompt: '0.000001' }, reference_price: 2, alias_target: 'acme/chat-base' },
      { id: 'acme/chat-base', category: 'text', pricing: { prompt: '0.000001' } },
    );
    const app = express()
      .use(createCatalogueService(registry).router)
      .use(errorHandler(() => 'req_test'));
    server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it.each(['/v1/catalog', '/v1/models', '/v1/models/count', '/v1/model/acme/chat', '/v1/embeddings/models'])(
    '%s is JSON that public caches may keep for a minute',
    async (path) => {
      const r = await fetch(`${url}${path}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.headers.get('cache-control')).toBe('public, max-age=60');
    },
  );

  it('the catalogue is built once: every request answers the same bytes, generatedAt included', async () => {
    const first = await (await fetch(`${url}/v1/catalog`)).text();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await (await fetch(`${url}/v1/catalog`)).text()).toBe(first);
    expect(JSON.parse(first).generatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('the single-model record carries alias_target and the discount from the config', async () => {
    const { data } = await (await fetch(`${url}/v1/model/acme/chat`)).json();
    expect(data).toMatchObject({ alias_target: 'acme/chat-base', discount: 0.5, reasoning: { supported: false } });
  });

  it('an unknown slug answers 404 model_unavailable', async () => {
    const r = await fetch(`${url}/v1/model/acme/nothing`);
    expect(r.status).toBe(404);
    expect((await r.json()).error).toMatchObject({ code: 'model_unavailable', request_id: 'req_test' });
  });
});
