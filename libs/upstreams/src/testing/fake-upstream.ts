import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProviderConfig, ResolvedEndpoint } from '@gateway/config';
import type { CallOptions } from '../types';

/** One request as the fake received it, body as raw bytes (JSON and multipart alike). */
export interface Hit {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface FakeUpstream {
  /** `http://127.0.0.1:<port>/v1`, as a provider's base_url. */
  baseUrl: string;
  /** Every request received, in order (but those `unrecorded` leaves out). */
  hits: Hit[];
  close(): Promise<void>;
}

export interface FakeUpstreamOptions {
  /** Requests answered but not recorded (the e2e suites leave out the status monitor's probes, which are no API calls). */
  unrecorded?: (headers: http.IncomingHttpHeaders) => boolean;
}

/**
 * A provider on 127.0.0.1 answering each whole request with `handle`: the HTTP protocols' unit tests, the conformance
 * suite's replays, and the e2e suites' fake providers (test-e2e/support/fake-server.ts) are all served by it. `req` is
 * there for what a handler does to the connection itself (destroying its socket to break an answer).
 */
export async function startFakeUpstream(
  handle: (hit: Hit, res: http.ServerResponse, req: http.IncomingMessage) => void | Promise<void>,
  options: FakeUpstreamOptions = {},
): Promise<FakeUpstream> {
  const hits: Hit[] = [];
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const hit = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(parts) };
      if (!options.unrecorded?.(req.headers)) hits.push(hit);
      void handle(hit, res, req);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** An `openai`-kind endpoint at `baseUrl`, its key in FAKE_KEY. */
export function endpointAt(baseUrl: string, provider: Partial<ProviderConfig> = {}): ResolvedEndpoint {
  return {
    key: 'fake/up-model',
    provider: { id: 'fake', kind: 'openai', base_url: baseUrl, api_key_env: 'FAKE_KEY', ...provider },
    upstreamModel: 'up-model',
  };
}

export const FAKE_ENV = { FAKE_KEY: 'sk-fake' };

export const callOptions = (): CallOptions => ({ signal: new AbortController().signal, requestId: 'req_test' });

export const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
