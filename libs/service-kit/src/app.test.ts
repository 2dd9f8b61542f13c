import http from 'node:http';
import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { GatewayError } from '@gateway/errors';
import { INTERNAL } from './context';
import { createServiceApp, finishApp, inTurn, serviceListener, singleMiddlewareListener } from './app';
import { createLogger } from './logger';

const logger = createLogger('test', 'silent');

/** What the edge's middleware does with a request, in miniature: a router behind it, and every way out. */
function middleware(): RequestHandler {
  const inner = express.Router();
  inner.get('/v1/items/:id', (req, res) => {
    res.json({ id: req.params.id, path: req.path, baseUrl: req.baseUrl, originalUrl: req.originalUrl, query: req.query, ip: req.ip });
  });
  inner.post('/v1/echo', express.json(), (req, res) => void res.status(201).json({ body: req.body, locals: typeof res.locals }));
  inner.get('/v1/async-failure', async () => {
    throw new GatewayError('rate_limited', 'slow down');
  });
  return (req, res, next) => {
    req.headers[INTERNAL.requestId] = 'req_test';
    if (req.path === '/v1/throws') throw new Error('thrown before any router');
    if (req.path === '/v1/gateway-error') return next(new GatewayError('invalid_request', 'refused at the edge'));
    if (req.path === '/v1/not-mine') return next();
    inner(req, res, next);
  };
}

/** The same middleware as an express app with finishApp's tail: what the edge was until 2026-11-27. */
function viaExpress(): http.Server {
  const app = createServiceApp();
  app.set('query parser', 'simple');
  app.set('trust proxy', 'loopback');
  app.use(middleware());
  finishApp(app, logger);
  return http.createServer(app);
}

/** The listener on a plain server (each request given the app's prototypes), or on one made as serve makes it. */
function viaListener(serverMade: 'plain' | 'with its classes'): http.Server {
  const app = createServiceApp();
  app.set('query parser', 'simple');
  app.set('trust proxy', 'loopback');
  const listener = singleMiddlewareListener(app, middleware(), logger);
  return serverMade === 'plain' ? http.createServer(listener) : http.createServer({ ...listener.serverOptions }, listener);
}

const cases: Array<[string, (r: request.Agent) => request.Test]> = [
  [
    'a routed GET with its params, URL fields, simple query and the client address behind a trusted proxy',
    (r) => r.get('/v1/items/42?a=1&a=2&b[c]=3').set('x-forwarded-for', '203.0.113.9'),
  ],
  ['a JSON POST answered with its status', (r) => r.post('/v1/echo').send({ x: [1, 2] })],
  ['a body the router refuses', (r) => r.post('/v1/echo').set('content-type', 'application/json').send('{"x":')],
  ['a path the middleware passes on: the 404 envelope', (r) => r.get('/v1/not-mine')],
  ['a path no inner route has: the 404 envelope', (r) => r.delete('/v1/items/42')],
  ['an error the middleware hands on', (r) => r.get('/v1/gateway-error')],
  ['a throw before any router', (r) => r.get('/v1/throws')],
  ['a rejected async route', (r) => r.get('/v1/async-failure')],
];

describe('singleMiddlewareListener answers as the express app of the same middleware did', () => {
  const servers = { express: viaExpress(), listener: viaListener('plain'), classes: viaListener('with its classes') };
  afterAll(() => Promise.all(Object.values(servers).map((s) => new Promise((r) => s.close(r)))));

  it.each(cases)('%s', async (_name, send) => {
    const answer = async (server: http.Server) => {
      const res = await send(request.agent(server));
      const { date: _date, ...headers } = res.headers;
      return { status: res.status, headers, body: res.body };
    };
    const a = await answer(servers.express);
    expect(await answer(servers.listener)).toEqual(a);
    expect(await answer(servers.classes)).toEqual(a);
    expect(a.status).toBeGreaterThan(0);
  });

  it("makes a server's requests and responses with the app's prototypes from birth, and leaves them as they are", async () => {
    const app = createServiceApp();
    const seen: unknown[] = [];
    const listener = singleMiddlewareListener(
      app,
      (req, res) => {
        seen.push(req instanceof http.IncomingMessage, res instanceof http.ServerResponse, typeof req.get, typeof res.json);
        seen.push(
          Object.getPrototypeOf(Object.getPrototypeOf(req)) === app.request,
          Object.getPrototypeOf(Object.getPrototypeOf(res)) === app.response,
        );
        res.end();
      },
      logger,
    );
    const server = http.createServer({ ...listener.serverOptions }, listener);
    await request(server).get('/');
    expect(seen).toEqual([true, true, 'function', 'function', true, true]);
  });

  it("takes the client address from the forwarded header only as the app's trust proxy setting says", async () => {
    for (const server of [servers.listener, servers.classes]) {
      const res = await request(server).get('/v1/items/1').set('x-forwarded-for', '203.0.113.9');
      expect(res.body).toMatchObject({ id: '1', path: '/v1/items/1', baseUrl: '', originalUrl: '/v1/items/1', ip: '203.0.113.9' });
    }
    const untrusting = http.createServer(singleMiddlewareListener(createServiceApp(), middleware(), logger));
    const direct = await request(untrusting).get('/v1/items/1').set('x-forwarded-for', '203.0.113.9');
    expect(direct.body.ip).not.toBe('203.0.113.9');
    expect(direct.body.ip).toMatch(/127\.0\.0\.1|::1/);
  });
});

describe("serviceListener: a fleet service's middlewares in turn, as its express app ran them", () => {
  const seen: string[] = [];
  const token: RequestHandler = (req, _res, next) => {
    seen.push('token');
    next(req.headers['x-token'] === 'ok' ? undefined : new GatewayError('invalid_api_key', 'internal token missing'));
  };
  const internal = express.Router().post('/internal/ping', (_req, res) => void res.json({ internal: true }));
  const publicRoutes = express.Router().get('/v1/thing', (_req, res) => void res.json({ thing: true }));
  const server = http.createServer(serviceListener(logger, internal, token, publicRoutes));
  afterAll(() => new Promise((r) => server.close(r)));

  it('answers from the first middleware that takes the request; the ones after it never run', async () => {
    seen.length = 0;
    expect((await request(server).post('/internal/ping')).body).toEqual({ internal: true });
    expect(seen).toEqual([]);
  });

  it('stops at an error: the envelope, and nothing after it runs', async () => {
    const res = await request(server).get('/v1/thing');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_api_key');
  });

  it('goes on through each one that calls next(), to a route or to the 404 envelope', async () => {
    expect((await request(server).get('/v1/thing').set('x-token', 'ok')).body).toEqual({ thing: true });
    const missing = await request(server).get('/v1/nothing').set('x-token', 'ok');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
  });

  it('hands a throw in any of them to the envelope', async () => {
    const throws: RequestHandler = () => {
      throw new GatewayError('invalid_request', 'thrown in turn');
    };
    const res = await request(http.createServer(serviceListener(logger, inTurn(token), throws)))
      .get('/x')
      .set('x-token', 'ok');
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe('thrown in turn');
  });
});
