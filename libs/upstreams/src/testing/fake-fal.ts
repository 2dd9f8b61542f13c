import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@gateway/testing';
import { silentMp4 } from '../simulated/mp4';

/**
 * A local fal queue (https://queue.fal.run as it answers): submit `POST /{model}`, then status, result and cancel
 * under the app id (the model's first two segments), and the videos of a result under `/files/`. Every call but a
 * file download must carry `Authorization: Key <key>`.
 *
 * What a request does is chosen by directives, read from the model path after the app id
 * (`fake/video/polls-2/reject`) and from an input field `fake` ("polls-2/reject"), so one config can reach them all:
 *   polls-<n>     COMPLETED on the (n+1)th status poll: IN_QUEUE for the first half, IN_PROGRESS after (default 0: at once)
 *   reject        the result is a content-policy refusal (422, detail type content_policy_violation)
 *   invalid       the result is a validation failure (422, FastAPI detail)
 *   result-500    the result answers 500
 *   result-hang   the result never answers
 *   submit-500    the submit answers 500
 *   submit-429    the submit answers 429
 *   submit-hang   the submit never answers
 *   foreign-urls  the submit answer's URLs point at another host (a client must not follow them with its key)
 * The result is `{video: {url, content_type, file_name, file_size}, seconds}` (n > 1: and `videos`), each URL served
 * here as an MP4 of `duration` seconds (input `duration`, default 5; `n`, default 1).
 */
export interface FalRequest {
  method: string;
  /** With its query string. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body; undefined when there was none. */
  body: Record<string, any> | undefined;
}

export interface FakeFalJob {
  id: string;
  model: string;
  input: Record<string, any>;
  directives: Set<string>;
  /** Status polls answered before COMPLETED (directive polls-<n>). */
  pollsToComplete: number;
  /** Status polls so far. */
  polls: number;
  canceled: boolean;
  completed: boolean;
}

export interface FakeFal {
  /** The provider's base_url. */
  url: string;
  key: string;
  requests: FalRequest[];
  /** Submitted requests by id, as the fake sees them. */
  jobs: Map<string, FakeFalJob>;
  /** The first request `match` accepts, once it has arrived. */
  received(match: (r: FalRequest) => boolean, what: string, timeoutMs?: number): Promise<FalRequest>;
  close(): Promise<void>;
}

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const appOf = (model: string) => model.split('/').slice(0, 2).join('/');

export interface FakeFalOptions {
  key?: string;
  /** Requests answered but not recorded (the e2e suites leave out the status monitor's probes, which are no API calls). */
  unrecorded?: (headers: http.IncomingHttpHeaders) => boolean;
}

export async function startFakeFal(options: FakeFalOptions = {}): Promise<FakeFal> {
  const key = options.key ?? 'fal-fake-key';
  const requests: FalRequest[] = [];
  const jobs = new Map<string, FakeFalJob>();
  let origin = '';

  const handle = (req: http.IncomingMessage, res: http.ServerResponse, hit: FalRequest) => {
    const path = new URL(hit.path, origin).pathname;
    // The id is a UUID, matched whole: a lazy `[\w-]+?` read a UUID whose last group is all digits as an index.
    const file = /^\/files\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:-(\d+))?\.mp4$/.exec(path);
    if (req.method === 'GET' && file) return serveFile(res, jobs.get(file[1]), Number(file[2] ?? 0));
    if (req.headers.authorization !== `Key ${key}`) return json(res, 401, { detail: 'Missing or invalid Authorization header' });

    const byId = /^\/([^/]+\/[^/]+)\/requests\/([\w-]+)(\/status|\/cancel)?$/.exec(path);
    if (byId) {
      const job = jobs.get(byId[2]);
      if (!job || appOf(job.model) !== byId[1]) return json(res, 404, { detail: 'Request not found' });
      if (req.method === 'GET' && byId[3] === '/status') return status(res, job, new URL(hit.path, origin).searchParams.get('logs') === '1');
      if (req.method === 'GET' && !byId[3]) return result(res, job);
      if (req.method === 'PUT' && byId[3] === '/cancel') return cancel(res, job);
      return json(res, 405, { detail: 'Method not allowed' });
    }
    if (req.method === 'POST') return submit(res, path.slice(1), hit.body ?? {});
    json(res, 404, { detail: 'Not found' });
  };

  const submit = (res: http.ServerResponse, model: string, input: Record<string, any>) => {
    const directives = new Set([...model.split('/').slice(2), ...(typeof input.fake === 'string' ? input.fake.split('/') : [])]);
    if (directives.has('submit-hang')) return;
    if (directives.has('submit-500')) return json(res, 500, { detail: 'Internal server error' });
    if (directives.has('submit-429')) return json(res, 429, { detail: 'Too many requests' });
    const id = crypto.randomUUID();
    const polls = Number([...directives].find((d) => /^polls-\d+$/.test(d))?.slice(6) ?? 0);
    jobs.set(id, { id, model, input, directives, pollsToComplete: polls, polls: 0, canceled: false, completed: polls === 0 });
    const at = directives.has('foreign-urls') ? 'http://foreign.invalid' : origin;
    const base = `${at}/${appOf(model)}/requests/${id}`;
    json(res, 200, { request_id: id, status_url: `${base}/status`, response_url: base, cancel_url: `${base}/cancel`, queue_position: 0 });
  };

  const status = (res: http.ServerResponse, job: FakeFalJob, logs: boolean) => {
    const toComplete = job.pollsToComplete;
    job.polls++;
    if (job.polls > toComplete || job.canceled) job.completed = true;
    const queued = !job.completed && job.polls <= Math.ceil(toComplete / 2);
    const state = job.completed ? 'COMPLETED' : queued ? 'IN_QUEUE' : 'IN_PROGRESS';
    const lines = [{ message: 'Request queued', level: 'INFO', source: 'user', timestamp: new Date().toISOString() }];
    if (state !== 'IN_QUEUE') lines.push({ message: 'Generating video', level: 'INFO', source: 'user', timestamp: new Date().toISOString() });
    json(res, job.completed ? 200 : 202, {
      status: state,
      ...(queued ? { queue_position: toComplete - job.polls } : {}),
      response_url: `${origin}/${appOf(job.model)}/requests/${job.id}`,
      logs: logs ? lines : null,
      ...(job.completed ? { metrics: { inference_time: 1.25 } } : {}),
    });
  };

  const result = (res: http.ServerResponse, job: FakeFalJob) => {
    if (!job.completed) return json(res, 400, { detail: 'Request is still in progress' });
    if (job.canceled) return json(res, 400, { detail: 'Request was cancelled' });
    const d = job.directives;
    if (d.has('result-hang')) return;
    if (d.has('result-500')) return json(res, 500, { detail: 'Internal server error' });
    if (d.has('reject')) {
      return json(res, 422, {
        detail: [
          {
            loc: ['body', 'prompt'],
            msg: 'The content could not be processed because it contained material flagged by a content checker.',
            type: 'content_policy_violation',
          },
        ],
      });
    }
    if (d.has('invalid')) return json(res, 422, { detail: [{ loc: ['body', 'duration'], msg: 'unexpected value', type: 'value_error' }] });
    const { seconds, n } = shape(job);
    const size = silentMp4(seconds).length;
    const videos = Array.from({ length: n }, (_, i) => ({
      url: `${origin}/files/${job.id}${i ? `-${i}` : ''}.mp4`,
      content_type: 'video/mp4',
      file_name: `output-${i}.mp4`,
      file_size: size,
    }));
    json(res, 200, { video: videos[0], ...(n > 1 ? { videos } : {}), seconds });
  };

  const cancel = (res: http.ServerResponse, job: FakeFalJob) => {
    if (job.completed) return json(res, 400, { status: 'ALREADY_COMPLETED' });
    job.canceled = true;
    json(res, 202, { status: 'CANCELLATION_REQUESTED' });
  };

  const serveFile = (res: http.ServerResponse, job: FakeFalJob | undefined, index: number) => {
    if (!job?.completed || job.canceled || index >= shape(job).n) return json(res, 404, { detail: 'File not found' });
    const bytes = silentMp4(shape(job).seconds);
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': bytes.length });
    res.end(bytes);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString();
      let body: Record<string, any> | undefined;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        return json(res, 400, { detail: 'Body is not JSON' });
      }
      const hit = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      if (!options.unrecorded?.(req.headers)) requests.push(hit);
      handle(req, res, hit);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: origin,
    key,
    requests,
    jobs,
    received: async (match, what, timeoutMs = 10_000) => {
      let found: FalRequest | undefined;
      await waitFor(() => (found = requests.find(match)) !== undefined, `the fake fal to receive ${what}`, timeoutMs);
      return found as FalRequest;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function shape(job: FakeFalJob): { seconds: number; n: number } {
  const seconds = Number(job.input.duration ?? 5);
  return { seconds: Number.isFinite(seconds) && seconds > 0 ? seconds : 5, n: Number.isInteger(job.input.n) ? job.input.n : 1 };
}
