import type http from 'node:http';
import type { TLSSocket } from 'node:tls';

/** Headers of one hop only (RFC 9110 7.6.1): each side of the edge has its own connection. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect']);

/** The names a Connection header lists: hop-by-hop for this message too. */
function connectionNamed(value: string | undefined): Set<string> | undefined {
  if (!value) return undefined;
  return new Set(value.split(',').map((t) => t.trim().toLowerCase()));
}

/**
 * The client's request headers as the service gets them: hop-by-hop ones left out, the rest as they came, and the
 * X-Forwarded-For, -Port, -Proto and -Host that http-proxy's `xfwd` wrote before (appended to the client's own).
 */
export function forwardedHeaders(req: http.IncomingMessage): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const named = connectionNamed(req.headers.connection);
  const headers = req.headers;
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name) && !named?.has(name)) out[name] = value;
  }
  const encrypted = (req.socket as TLSSocket).encrypted === true;
  const append = (name: string, value: string) => {
    const prior = headers[name];
    out[name] = prior ? `${prior},${value}` : value;
  };
  append('x-forwarded-for', req.socket.remoteAddress ?? '');
  append('x-forwarded-port', /:(\d+)$/.exec(headers.host ?? '')?.[1] ?? (encrypted ? '443' : '80'));
  append('x-forwarded-proto', encrypted ? 'https' : 'http');
  out['x-forwarded-host'] = headers['x-forwarded-host'] ?? headers.host ?? '';
  return out;
}

/**
 * The service's response headers as undici hands them over (name, value, name, value... as bytes), for the client:
 * hop-by-hop ones left out (node's server writes its own), a repeated name (Set-Cookie) kept as a list.
 */
export function responseHeaders(raw: Buffer[] | string[] | null): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (!raw) return out;
  let named: Set<string> | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toString('latin1').toLowerCase();
    const value = raw[i + 1].toString('latin1');
    if (name === 'connection') named = connectionNamed(value);
    if (HOP_BY_HOP.has(name)) continue;
    const prior = out[name];
    out[name] = prior === undefined ? value : Array.isArray(prior) ? [...prior, value] : [prior, value];
  }
  if (named) for (const name of named) delete out[name];
  return out;
}
