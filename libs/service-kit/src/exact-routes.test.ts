import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import request from 'supertest';
import { exactRoutes, type PostRoutes } from './exact-routes';
import { jsonBody } from './json-body';

/** The same routes on either router, behind one app with a 404 and an error handler, as every listener has. */
function appWith(router: RequestHandler & PostRoutes) {
  router.post('/v1/echo', async (req, res) => void res.json({ body: req.body, path: req.path, query: req.query }));
  router.post('/v1/throws', () => {
    throw new Error('thrown');
  });
  router.post('/v1/rejects', async () => {
    throw new Error('rejected');
  });
  // A rejection without a reason must still reach the error handler, not leave the request hanging.
  router.post('/v1/rejects-empty', () => Promise.reject(undefined));
  const app = express();
  app.use(router);
  app.use((req, res) => void res.status(404).json({ notFound: `${req.method} ${req.path}` }));
  const onError: ErrorRequestHandler = (err, _req, res, _next) =>
    void res.status(err.status ?? 500).json({ error: err.message ?? null, type: err.type ?? null });
  app.use(onError);
  return app;
}

const exact = appWith(exactRoutes(jsonBody('1kb')));
const reference = (() => {
  const r = express.Router();
  r.use(jsonBody('1kb'));
  return appWith(r);
})();

async function both(method: 'get' | 'post' | 'put', path: string, body?: string) {
  const send = async (app: express.Express) => {
    let r = request(app)[method](path);
    if (body !== undefined) r = r.set('content-type', 'application/json').send(body);
    const res = await r;
    return { status: res.status, body: res.body };
  };
  return { exact: await send(exact), reference: await send(reference) };
}

describe('exactRoutes answers as express router did for fixed paths', () => {
  it.each([
    ['post', '/v1/echo', '{"a":1}'],
    ['post', '/v1/echo/', '{"a":1}'],
    ['post', '/v1/echo?x=1&y=2', '{"a":[1,2]}'],
    ['post', '/v1/echo', '{"a":'],
    ['post', '/v1/echo', '{"a":"\\u0000"}'],
    ['post', '/v1/throws', '{}'],
    ['post', '/v1/rejects', '{}'],
    ['post', '/v1/rejects-empty', '{}'],
    ['get', '/v1/echo', undefined],
    ['put', '/v1/echo', '{}'],
    ['post', '/v1/echo//', '{}'],
    ['post', '/v1/ech', '{}'],
    ['post', '/v1/echo/more', '{}'],
    ['post', '/v1', '{}'],
  ] as const)('%s %s %s', async (method, path, body) => {
    const { exact: e, reference: r } = await both(method, path, body);
    expect(e).toEqual(r);
  });

  it('runs the body parser only for a request a route takes: a bad body on an unknown path is its 404', async () => {
    const res = await request(exact).post('/v1/unknown').set('content-type', 'application/json').send('{"a":');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ notFound: 'POST /v1/unknown' });
  });

  it('matches the path case-sensitively, as the service table routes it', async () => {
    const res = await request(exact).post('/V1/Echo').set('content-type', 'application/json').send('{}');
    expect(res.status).toBe(404);
  });

  it('refuses a path it cannot match exactly, and a route mounted twice', () => {
    const routes = exactRoutes();
    expect(() => routes.post('/v1/jobs/:id', async () => {})).toThrow('not a fixed path');
    expect(() => routes.post('/v1/echo/', async () => {})).toThrow('not a fixed path');
    routes.post('/v1/echo', async () => {});
    expect(() => routes.post('/v1/echo', async () => {})).toThrow('mounted twice');
  });
});
