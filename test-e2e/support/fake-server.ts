import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { STATUS_PROBE_AGENT } from '../../services/catalogue/src/status/checks';
import { waitFor } from '../../libs/testing/src/wait';

/** One request as a fake upstream received it. */
export interface Received {
  model: string;
  body: Record<string, any>;
  headers: http.IncomingHttpHeaders;
}

/**
 * A local fake of a provider: its base URL (…/v1), every request it received in order (the status monitor's probes
 * excepted), and a way to stop it.
 */
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
 * The shell every fake provider shares: reads and records each JSON or multipart request, then lets `handle` answer it in the
 * provider's own protocol (and fail, stall or break as the upstream model name asks).
 */
export async function startFakeServer(
  handle: (req: http.IncomingMessage, res: http.ServerResponse, received: Received) => void | Promise<void>,
): Promise<FakeUpstream> {
  const requests: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      const type = req.headers['content-type'] ?? '';
      const body = /^multipart\/form-data/i.test(type) ? await formFields(raw, type) : JSON.parse(raw.toString() || '{}');
      const received = { model: typeof body.model === 'string' ? body.model : '', body, headers: req.headers };
      // The status monitor's reachability probes are no API calls and come at any time: a test counting the calls
      // its request made must not count one (rerank.e2e did, once).
      if (req.headers['user-agent'] !== STATUS_PROBE_AGENT) requests.push(received);
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

/** An uploaded file as a multipart fake records it. */
export interface ReceivedFile {
  name: string;
  type: string;
  bytes: Buffer;
}

/**
 * A multipart/form-data body as one object, the way JSON bodies are recorded: text fields by name (`name[]` fields
 * gathered into an array under `name`), files as ReceivedFile.
 */
async function formFields(raw: Buffer, contentType: string): Promise<Record<string, unknown>> {
  const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': contentType } }).formData();
  const fields: Record<string, unknown> = {};
  for (const [name, value] of form.entries()) {
    if (typeof value !== 'string') fields[name] = { name: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
    else if (name.endsWith('[]')) ((fields[name.slice(0, -2)] ??= []) as string[]).push(value);
    else fields[name] = value;
  }
  return fields;
}
