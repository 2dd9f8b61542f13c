import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '../../libs/testing/src/wait';

/** One request as a fake upstream received it. */
export interface Received {
  model: string;
  body: Record<string, any>;
  headers: http.IncomingHttpHeaders;
}

/** A local fake of a provider: its base URL (…/v1), every request it received in order, and a way to stop it. */
export interface FakeUpstream {
  url: string;
  requests: Received[];
  /**
   * The first request `match` accepts, once it has arrived (it may have already): a test waits for the upstream to
   * be reached, never for time. Match on something unique to the request awaited.
   */
  received(match: (r: Received) => boolean, what: string, timeoutMs?: number): Promise<Received>;
  close(): Promise<void>;
}

/**
 * The shell every fake provider shares: reads and records each JSON request, then lets `handle` answer it in the
 * provider's own protocol (and fail, stall or break as the upstream model name asks).
 */
export async function startFakeServer(
  handle: (req: http.IncomingMessage, res: http.ServerResponse, received: Received) => void | Promise<void>,
): Promise<FakeUpstream> {
  const requests: Received[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}');
      const received = { model: typeof body.model === 'string' ? body.model : '', body, headers: req.headers };
      requests.push(received);
      void handle(req, res, received);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    received: async (match, what, timeoutMs = 10_000) => {
      let found: Received | undefined;
      await waitFor(() => (found = requests.find(match)) !== undefined, `the fake upstream to receive ${what}`, timeoutMs);
      return found!;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
