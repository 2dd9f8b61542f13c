import type { Response } from 'express';
import { type ErrorCode, errorEnvelope, errorHandler, GatewayError, sendError, statusOf, toGatewayError } from './index';

/** What an express Response was told: enough of one for sendError, which only sets headers, a status and JSON. */
function fakeResponse(headersSent = false) {
  const seen = { status: 0, headers: {} as Record<string, string>, body: undefined as unknown, ended: false };
  const res = {
    headersSent,
    setHeader(k: string, v: string) {
      seen.headers[k] = v;
      return res;
    },
    status(s: number) {
      seen.status = s;
      return res;
    },
    json(b: unknown) {
      seen.body = b;
      return res;
    },
    end() {
      seen.ended = true;
      return res;
    },
  };
  return { res: res as unknown as Response, seen };
}

describe('the error envelope', () => {
  const CODES: [ErrorCode, number][] = [
    ['invalid_request', 400],
    ['invalid_api_key', 401],
    ['insufficient_credits', 402],
    ['not_found', 404],
    ['model_unavailable', 409],
    ['canceled', 409],
    ['duplicate_request', 409],
    ['gone', 410],
    ['rate_limited', 429],
    ['upstream_unavailable', 503],
  ];

  it.each(CODES)('%s answers %i with the envelope, unless the thrower says otherwise', (code, status) => {
    expect(statusOf(code)).toBe(status);
    const { res, seen } = fakeResponse();
    sendError(res, new GatewayError(code, 'what went wrong'), 'req_1');
    expect(seen.status).toBe(status);
    expect(seen.body).toEqual({ error: { code, message: 'what went wrong', request_id: 'req_1' } });
    expect(new GatewayError(code, 'm', { status: 418 }).status).toBe(418);
  });

  it('carries the error’s headers (Retry-After on a 429) onto the response', () => {
    const { res, seen } = fakeResponse();
    sendError(res, new GatewayError('rate_limited', 'slow down', { headers: { 'retry-after': '7' } }), 'req_2');
    expect(seen).toMatchObject({ status: 429, headers: { 'retry-after': '7' } });
  });

  it('ends a response whose headers are already sent (a stream) instead of writing a second status', () => {
    const { res, seen } = fakeResponse(true);
    sendError(res, new GatewayError('invalid_request', 'late'), 'req_3');
    expect(seen).toMatchObject({ status: 0, body: undefined, ended: true });
  });

  it('maps the body parser’s and the router’s errors to client faults, and anything else to a 503 that reveals nothing', () => {
    const cases: [unknown, string, number, RegExp][] = [
      [{ type: 'entity.parse.failed', status: 400 }, 'invalid_request', 400, /not valid JSON/],
      [{ type: 'entity.too.large', status: 413 }, 'invalid_request', 413, /too large/],
      [{ type: 'charset.unsupported', status: 415, message: 'unsupported charset "X"' }, 'invalid_request', 400, /unsupported charset/],
      [new URIError('URI malformed'), 'invalid_request', 400, /percent-encoding/],
      [
        Object.assign(new Error('incorrect header check'), { status: 400, expose: true }),
        'invalid_request',
        400,
        /could not be read: incorrect header/,
      ],
      [Object.assign(new Error('secret detail'), { status: 400 }), 'upstream_unavailable', 503, /failed to handle/],
      [{ type: 'stream.encoding.set', status: 500 }, 'upstream_unavailable', 503, /failed to handle/],
      [new Error('database password is hunter2'), 'upstream_unavailable', 503, /failed to handle/],
      [undefined, 'upstream_unavailable', 503, /failed to handle/],
    ];
    for (const [thrown, code, status, message] of cases) {
      const e = toGatewayError(thrown);
      expect({ code: e.code, status: e.status }).toEqual({ code, status });
      expect(e.message).toMatch(message);
      expect(e.message).not.toContain('hunter2');
    }
    const own = new GatewayError('gone', 'bye');
    expect(toGatewayError(own)).toBe(own);
  });

  it('rebuilds an envelope that crossed a service boundary with its status and code, and nothing it does not know', () => {
    const e = GatewayError.fromEnvelope(402, errorEnvelope(new GatewayError('insufficient_credits', 'top up'), 'req_4'));
    expect(e).toMatchObject({ code: 'insufficient_credits', status: 402, message: 'top up' });
    expect(GatewayError.fromEnvelope(404, { error: { code: 'model_unavailable' } })).toMatchObject({ status: 404, message: 'model_unavailable' });
    expect(GatewayError.fromEnvelope(500, { error: { code: 'teapot', message: 'x' } })).toBeUndefined();
    expect(GatewayError.fromEnvelope(500, 'not json')).toBeUndefined();
    expect(GatewayError.fromEnvelope(500, undefined)).toBeUndefined();
    expect(GatewayError.notFound('Model a/b')).toMatchObject({ code: 'model_unavailable', status: 404, message: 'Model a/b not found' });
  });

  it('the middleware reports only what is neither a GatewayError nor the parser’s, and answers with the service’s request id', () => {
    const unexpected: unknown[] = [];
    const handle = errorHandler(
      () => 'req_5',
      (err) => unexpected.push(err),
    );
    const run = (err: unknown) => {
      const { res, seen } = fakeResponse();
      handle(err, {} as never, res, () => undefined);
      return seen;
    };
    expect(run(new GatewayError('not_found', 'no such file'))).toMatchObject({ status: 404, body: { error: { request_id: 'req_5' } } });
    expect(run({ type: 'entity.parse.failed', status: 400 }).status).toBe(400);
    expect(unexpected).toEqual([]);
    const bug = new TypeError('x is undefined');
    expect(run(bug)).toMatchObject({ status: 503, body: { error: { code: 'upstream_unavailable' } } });
    expect(unexpected).toEqual([bug]);
  });
});
