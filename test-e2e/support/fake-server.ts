import type http from 'node:http';
import { startFakeUpstream } from '@gateway/upstreams/testing';
import { STATUS_PROBE_AGENT } from '@gateway/catalogue';
import { waitFor } from '@gateway/testing';

/** One request as a fake upstream received it. */
export interface Received {
  model: string;
  body: Record<string, any>;
  headers: http.IncomingHttpHeaders;
}

/**
 * A local fake of a provider as the e2e suites see it (a view of @gateway/upstreams/testing's fake upstream): its base
 * URL (…/v1), every request it received in order and parsed (the status monitor's probes excepted), and a way to stop it.
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
 * The shell every fake provider shares: @gateway/upstreams/testing's fake upstream, with each JSON or multipart request
 * read and recorded as the e2e suites look at it, then `handle` answers it in the provider's own protocol (and fails,
 * stalls or breaks as the upstream model name asks).
 */
export async function startFakeServer(
  handle: (req: http.IncomingMessage, res: http.ServerResponse, received: Received) => void | Promise<void>,
): Promise<FakeUpstream> {
  const requests: Received[] = [];
  // The status monitor's reachability probes are no API calls and come at any time: a test counting the calls
  // its request made must not count one (rerank.e2e did, once).
  const isProbe = (headers: http.IncomingHttpHeaders) => headers['user-agent'] === STATUS_PROBE_AGENT;
  const up = await startFakeUpstream(
    async (hit, res, req) => {
      const type = hit.headers['content-type'] ?? '';
      const body = /^multipart\/form-data/i.test(type) ? await formFields(hit.body, type) : JSON.parse(hit.body.toString() || '{}');
      const received = { model: typeof body.model === 'string' ? body.model : '', body, headers: hit.headers };
      if (!isProbe(hit.headers)) requests.push(received);
      void handle(req, res, received);
    },
    { unrecorded: isProbe },
  );
  return {
    url: up.baseUrl,
    requests,
    received: async (match, what, timeoutMs = 10_000) => {
      let found: Received | undefined;
      await waitFor(() => (found = requests.find(match)) !== undefined, `the fake upstream to receive ${what}`, timeoutMs);
      return found!;
    },
    close: up.close,
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
