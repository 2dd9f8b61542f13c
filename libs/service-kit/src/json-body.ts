import bytes from 'bytes';
import express, { type RequestHandler } from 'express';
import { checkJsonBody } from './validate';

/** body-parser's error shape, so the envelope maps a refusal here exactly as it maps body-parser's own. */
const parseFailure = () => Object.assign(new Error('Request body is not valid JSON'), { status: 400, type: 'entity.parse.failed' });
const aborted = () => Object.assign(new Error('request aborted'), { status: 400, type: 'request.aborted' });

/** What a client sends for a JSON body, in the spellings worth the fast path; any other goes to body-parser. */
const PLAIN_JSON = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=utf-8',
  'application/json; charset=UTF-8',
]);

/** A refusal whose message the envelope passes on as it is (a 400 `invalid_request`). */
const refusal = (message: string) => Object.assign(new Error(message), { status: 400, type: 'entity.verify.failed' });

/** The media type without its parameters, as type-is compares it. */
const essence = (contentType: string | undefined) => (contentType ?? '').split(';')[0].trim().toLowerCase();

/**
 * Every JSON request body: parsed (parseJsonBody), then refused with a message that says what is wrong when it is
 * not JSON at all (a body sent with another Content-Type, which the parser skips, so the route's schema saw no
 * body and said "expected object, received undefined") or is JSON but not an object or array (a bare string,
 * which body-parser's strict mode called "not valid JSON"). An empty body passes on, for the route's schema.
 */
export function jsonBody(limit: string): RequestHandler {
  const parse = parseJsonBody(limit);
  return (req, res, next) => {
    const h = req.headers;
    const hasBody = h['transfer-encoding'] !== undefined || Number(h['content-length'] ?? 0) > 0;
    const type = essence(h['content-type']);
    if (hasBody && type !== 'application/json') {
      const got = type ? `Content-Type ${type}` : 'no Content-Type';
      return next(refusal(`Request body must be JSON, sent with Content-Type: application/json (this one has ${got})`));
    }
    parse(req, res, (err?: unknown) => {
      if (err) return next(err);
      const body: unknown = req.body;
      if (body === undefined || (typeof body === 'object' && body !== null)) return next();
      const kind = body === null ? 'null' : `a ${typeof body}`;
      next(refusal(`Request body must be a JSON object; this one is ${kind}`));
    });
  };
}

/**
 * Parses a JSON request body (and refuses what checkJsonBody refuses), like `express.json({ limit, verify:
 * checkJsonBody, strict: false })` and with its errors, but reads the common body itself: identity-encoded UTF-8
 * `application/json` with a Content-Length within the limit. body-parser spends, per request, a content-type parse,
 * a type match, a charset decoder, a raw-body reader with its listeners and an on-finished hook: about 4 % of the
 * embedded gateway's request thread under load, for work this does in one buffer and one JSON.parse. Every other
 * body (compressed, chunked, another charset, empty, too large) takes body-parser's own path, so its refusals and
 * its edge cases stay exactly its own.
 */
export function parseJsonBody(limit: string): RequestHandler {
  const maxBytes = bytes.parse(limit) ?? Number.POSITIVE_INFINITY;
  // Not strict: jsonBody refuses a bare value itself, with a message that says so.
  const general = express.json({ limit, verify: checkJsonBody, strict: false });
  return (req, res, next) => {
    const h = req.headers;
    const length = h['content-length'] === undefined ? Number.NaN : Number(h['content-length']);
    const plain =
      (req as { _body?: boolean })._body !== true &&
      h['content-encoding'] === undefined &&
      h['transfer-encoding'] === undefined &&
      length > 0 &&
      length <= maxBytes &&
      PLAIN_JSON.has(h['content-type'] ?? '');
    if (!plain) return general(req, res, next);
    const chunks: Buffer[] = [];
    // One outcome per request: an error the connection reports after the body was handed on must not call next again.
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      next(err);
    };
    // `on`, not `once`: each fires at most once here or is guarded by `settled`, and `once` wraps every listener
    // in a closure of its own, on every request.
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => fail(aborted()));
    req.on('aborted', () => fail(aborted()));
    req.on('end', () => {
      if (settled) return;
      const buf = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      let body: unknown;
      try {
        checkJsonBody(req, res, buf, 'utf-8');
        // iconv, under body-parser, drops a UTF-8 byte order mark; so does this.
        const text = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? buf.toString('utf8', 3) : buf.toString('utf8');
        body = JSON.parse(text);
      } catch (e) {
        return fail((e as { type?: string }).type ? (e as Error) : parseFailure());
      }
      settled = true;
      (req as { _body?: boolean })._body = true;
      req.body = body;
      next();
    });
  };
}
