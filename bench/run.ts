/**
 * `pnpm bench`: autocannon against a zero-latency upstream directly, through the embedded gateway and through
 * the local fleet, in one run; prints requests/s, p50 and p99 and the overhead over the matching direct call.
 * Every gateway request is authenticated, metered, held and settled. Chat runs at BENCH_CONNECTIONS (50) and at 1
 * connection for BENCH_SECONDS (10); the other routes at BENCH_CONNECTIONS for BENCH_ROUTE_SECONDS (5).
 * BENCH_ROUTES=chat,embeddings picks routes; BENCH_SKIP_FLEET=1 leaves the fleet out (it needs PostgreSQL and Redis).
 * `pnpm bench bus` measures the memory event bus alone instead (bench/bus.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { startFleet } from '../deploy/local-fleet';
import { benchBus } from './bus';

const ROOT = path.resolve(__dirname, '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUTE_SECONDS = Number(process.env.BENCH_ROUTE_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ONLY = process.env.BENCH_ROUTES?.split(',').map((r) => r.trim());

const chatMessages = [{ role: 'user', content: 'ping' }];
/** Each gateway route, and the upstream call it makes, so overhead is measured against the matching direct call. */
const ROUTES = [
  { name: 'chat', path: '/v1/chat/completions', body: { model: 'bench/echo', messages: chatMessages, max_tokens: 16 }, direct: 'chat' },
  { name: 'completions', path: '/v1/completions', body: { model: 'bench/echo', prompt: 'ping', max_tokens: 16 }, direct: 'chat' },
  { name: 'responses', path: '/v1/responses', body: { model: 'bench/echo', input: 'ping', max_output_tokens: 16 }, direct: 'chat' },
  { name: 'messages', path: '/v1/messages', body: { model: 'bench/claude', max_tokens: 16, messages: chatMessages }, direct: 'messages' },
  { name: 'embeddings', path: '/v1/embeddings', body: { model: 'bench/embed', input: 'ping', encoding_format: 'float' }, direct: 'embeddings' },
  { name: 'rerank', path: '/v1/rerank', body: { model: 'bench/rerank', query: 'ping', documents: ['pong', 'ping'] }, direct: 'rerank' },
  { name: 'image', path: '/v1/images/generations', body: { model: 'bench/image', prompt: 'ping' }, direct: 'image' },
  // A 64 KiB generated file streamed through the gateway from its origin; the path is filled in from one image call.
  { name: 'file', path: '', body: undefined, direct: 'file' },
].filter((r) => !ONLY || ONLY.includes(r.name));

const DIRECT: Record<string, { path: string; body: unknown }> = {
  chat: { path: '/v1/chat/completions', body: { model: 'echo', messages: chatMessages, max_tokens: 16 } },
  messages: { path: '/v1/messages', body: { model: 'echo', max_tokens: 16, messages: chatMessages } },
  embeddings: { path: '/v1/embeddings', body: { model: 'echo', input: 'ping' } },
  rerank: { path: '/v1/rerank', body: { model: 'echo', query: 'ping', documents: ['pong', 'ping'] } },
  image: { path: '/v1/images/generations', body: { model: 'echo', prompt: 'ping' } },
  file: { path: '/files/bench.png', body: undefined },
};

interface Result {
  route: string;
  target: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

function load(
  url: string,
  body: unknown,
  connections: number,
  seconds: number,
  headers: Record<string, string>,
): Promise<Omit<Result, 'route' | 'target'>> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        // A body makes it a POST; none, a GET (file downloads).
        method: body === undefined ? 'GET' : 'POST',
        body: body === undefined ? undefined : JSON.stringify(body),
        headers: { 'content-type': 'application/json', ...headers },
        connections,
        duration: seconds,
      },
      (err: unknown, r: autocannon.Result) => {
        if (err) return reject(err);
        resolve({ connections, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx });
      },
    );
  });
}

function startChild(cmd: string, args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; firstLine: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve({ child, firstLine: out.split('\n')[0].trim() });
    });
    child.once('exit', (code) => reject(new Error(`${cmd} exited ${code}`)));
  });
}

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} never became ready`);
}

async function benchAccount(base: string, adminToken: string): Promise<string> {
  const admin = (p: string, body: unknown) =>
    fetch(`${base}${p}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json());
  const acct = await admin('/admin/v1/accounts', { credits: 1_000_000, rate_limit: { requests: 100_000_000, interval: '60s' } });
  const key = await admin(`/admin/v1/accounts/${acct.data.account_id}/keys`, { label: 'bench' });
  return key.data.key;
}

/** One image generated through the gateway: the /v1/files URL it answered, which the file route then downloads. */
async function generatedFileUrl(base: string, headers: Record<string, string>): Promise<string> {
  const r = await fetch(`${base}/v1/images/generations`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench/image', prompt: 'ping' }),
  });
  const url = new URL((await r.json()).data[0].url);
  return `${base}${url.pathname}`;
}

/** Chat at CONNECTIONS and at 1 connection (the two figures); every other route at CONNECTIONS. */
async function throughGateway(target: string, base: string, adminToken: string, out: Result[]): Promise<void> {
  const headers = { authorization: `Bearer ${await benchAccount(base, adminToken)}` };
  for (const route of ROUTES) {
    const url = route.name === 'file' ? await generatedFileUrl(base, headers) : `${base}${route.path}`;
    const seconds = route.name === 'chat' ? SECONDS : ROUTE_SECONDS;
    await load(url, route.body, CONNECTIONS, Math.min(3, seconds), headers); // warm-up
    for (const c of route.name === 'chat' ? [CONNECTIONS, 1] : [CONNECTIONS])
      out.push({ route: route.name, target, ...(await load(url, route.body, c, seconds, headers)) });
  }
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-bench-'));
  const upstream = await startChild(process.execPath, [path.join(ROOT, 'bench', 'zero-upstream.mjs')], {});
  const upstreamUrl = `http://127.0.0.1:${upstream.firstLine}`;
  const model = (id: string, category: string, provider: string, extra: Record<string, unknown> = {}) => ({
    id,
    name: id,
    category,
    status: 'available',
    pricing: { prompt: '0.000001', completion: '0.000002' },
    endpoints: [{ provider, model: 'echo' }],
    ...extra,
  });
  const config = {
    providers: [
      { id: 'zero', kind: 'openai', base_url: `${upstreamUrl}/v1`, timeout_ms: 5000 },
      { id: 'zero-anthropic', kind: 'anthropic', base_url: `${upstreamUrl}/v1`, timeout_ms: 5000 },
      { id: 'zero-cohere', kind: 'cohere', base_url: `${upstreamUrl}/v1`, timeout_ms: 5000 },
    ],
    models: [
      model('bench/echo', 'text', 'zero', { context_length: 4096, max_output_tokens: 64 }),
      model('bench/claude', 'text', 'zero-anthropic', { context_length: 4096, max_output_tokens: 64 }),
      model('bench/embed', 'embedding', 'zero'),
      model('bench/rerank', 'rerank', 'zero-cohere'),
      model('bench/image', 'image', 'zero', { pricing: { image: '0.01' } }),
    ],
  };
  const configPath = path.join(dir, 'config.json');
  fs.writeFileSync(configPath, JSON.stringify(config));
  const results: Result[] = [];
  const children: ChildProcess[] = [upstream.child];
  try {
    for (const kind of new Set(ROUTES.map((r) => r.direct))) {
      const d = DIRECT[kind];
      const url = `${upstreamUrl}${d.path}`;
      await load(url, d.body, CONNECTIONS, 2, {});
      for (const c of kind === 'chat' ? [CONNECTIONS, 1] : [CONNECTIONS])
        results.push({ route: `direct ${kind}`, target: 'direct', ...(await load(url, d.body, c, kind === 'chat' ? SECONDS : ROUTE_SECONDS, {})) });
    }

    const port = 18_000 + Math.floor(Math.random() * 1000);
    const adminToken = `bench-${crypto.randomBytes(8).toString('hex')}`;
    const embedded = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'services', 'gateway', 'src', 'main.ts')], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        GATEWAY_CONFIG: configPath,
        GATEWAY_ADMIN_TOKEN: adminToken,
        GATEWAY_DATA_DIR: path.join(dir, 'data'),
        LOG_LEVEL: 'warn',
        DATABASE_URL: '',
        REDIS_URL: '',
        BUS: '',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(embedded);
    await waitFor(`http://127.0.0.1:${port}/v1/models`);
    await throughGateway('embedded', `http://127.0.0.1:${port}`, adminToken, results);
    embedded.kill('SIGTERM');

    if (!process.env.BENCH_SKIP_FLEET) {
      const fleet = await startFleet({
        port: port + 10,
        configPath,
        adminToken,
        databaseUrl: `postgres://postgres@127.0.0.1:5432/gw_bench_${crypto.randomBytes(4).toString('hex')}`,
        dropDatabaseOnStop: true,
        logDir: dir,
        env: { LOG_LEVEL: 'warn' },
      });
      try {
        await throughGateway('fleet', fleet.url, adminToken, results);
      } finally {
        await fleet.stop();
      }
    }
  } finally {
    for (const c of children) c.kill('SIGTERM');
  }

  const direct = (route: string, c: number) =>
    results.find((r) => r.target === 'direct' && r.route === `direct ${ROUTES.find((x) => x.name === route)?.direct}` && r.connections === c);
  const rows = results.map((r) => {
    const d = r.target === 'direct' ? undefined : direct(r.route, r.connections);
    const overhead = d ? `+${(r.p50 - d.p50).toFixed(2)} ms p50; ${(d.rps / r.rps).toFixed(1)}x the time per request` : '';
    return `| ${r.route} | ${r.target} | ${r.connections} | ${Math.round(r.rps)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.errors + r.non2xx} | ${overhead} |`;
  });
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  process.stdout.write(
    [
      `\n${machine}; chat ${SECONDS} s per run, other routes ${ROUTE_SECONDS} s`,
      '',
      '| route | target | connections | requests/s | p50 ms | p99 ms | errors + non-2xx | overhead over direct |',
      '|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
    ].join('\n'),
  );
}

(process.argv[2] === 'bus' ? benchBus().then((table) => void process.stdout.write(table)) : main()).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench failed: ${(e as Error).stack}\n`);
    process.exit(1);
  },
);
