/**
 * `pnpm bench`: autocannon against a zero-latency upstream directly, through the embedded gateway and through
 * the local fleet, in one run; prints requests/s, p50 and p99 and the overhead over direct.
 * Every gateway request is authenticated, metered, held and settled. Env: BENCH_SECONDS (default 10),
 * BENCH_CONNECTIONS (default 50), BENCH_SKIP_FLEET=1 to leave the fleet out (it needs PostgreSQL and Redis).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { startFleet } from '../deploy/local-fleet';

const ROOT = path.resolve(__dirname, '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const BODY = JSON.stringify({ model: 'bench/echo', messages: [{ role: 'user', content: 'ping' }], max_tokens: 16 });

interface Result { target: string; connections: number; rps: number; p50: number; p99: number; errors: number; non2xx: number }

function load(url: string, connections: number, headers: Record<string, string>, target: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    autocannon({ url, method: 'POST', body: BODY, headers: { 'content-type': 'application/json', ...headers }, connections, duration: SECONDS }, (err, r) => {
      if (err) return reject(err);
      resolve({ target, connections, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx });
    });
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
    fetch(`${base}${p}`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
  const acct = await admin('/admin/v1/accounts', { credits: 1_000_000, rate_limit: { requests: 100_000_000, interval: '60s' } });
  const key = await admin(`/admin/v1/accounts/${acct.data.account_id}/keys`, { label: 'bench' });
  return key.data.key;
}

async function throughGateway(name: string, base: string, adminToken: string): Promise<Result[]> {
  const key = await benchAccount(base, adminToken);
  const headers = { authorization: `Bearer ${key}` };
  await load(`${base}/v1/chat/completions`, CONNECTIONS, headers, `${name} (warm-up)`);
  return [await load(`${base}/v1/chat/completions`, CONNECTIONS, headers, name), await load(`${base}/v1/chat/completions`, 1, headers, name)];
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-bench-'));
  const upstream = await startChild(process.execPath, [path.join(ROOT, 'bench', 'zero-upstream.mjs')], {});
  const upstreamUrl = `http://127.0.0.1:${upstream.firstLine}`;
  const config = {
    providers: [{ id: 'zero', kind: 'openai', base_url: `${upstreamUrl}/v1`, timeout_ms: 5000 }],
    models: [{ id: 'bench/echo', name: 'Bench', category: 'text', status: 'available', context_length: 4096, max_output_tokens: 64,
      pricing: { prompt: '0.000001', completion: '0.000002' }, endpoints: [{ provider: 'zero', model: 'echo' }] }],
  };
  const configPath = path.join(dir, 'config.json');
  fs.writeFileSync(configPath, JSON.stringify(config));
  const results: Result[] = [];
  const children: ChildProcess[] = [upstream.child];
  try {
    await load(`${upstreamUrl}/v1/chat/completions`, CONNECTIONS, {}, 'direct (warm-up)');
    results.push(await load(`${upstreamUrl}/v1/chat/completions`, CONNECTIONS, {}, 'direct'));
    results.push(await load(`${upstreamUrl}/v1/chat/completions`, 1, {}, 'direct'));

    const port = 18_000 + Math.floor(Math.random() * 1000);
    const adminToken = `bench-${crypto.randomBytes(8).toString('hex')}`;
    const embedded = spawn(path.join(ROOT, 'node_modules', '.bin', 'tsx'), [path.join(ROOT, 'services', 'gateway', 'src', 'main.ts')], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), GATEWAY_CONFIG: configPath, GATEWAY_ADMIN_TOKEN: adminToken, GATEWAY_DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'warn', DATABASE_URL: '', REDIS_URL: '', BUS: '' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(embedded);
    await waitFor(`http://127.0.0.1:${port}/v1/models`);
    results.push(...(await throughGateway('embedded', `http://127.0.0.1:${port}`, adminToken)));
    embedded.kill('SIGTERM');

    if (!process.env.BENCH_SKIP_FLEET) {
      const fleet = await startFleet({ port: port + 10, configPath, adminToken, databaseUrl: `postgres://postgres@127.0.0.1:5432/gw_bench_${crypto.randomBytes(4).toString('hex')}`, dropDatabaseOnStop: true, logDir: dir, env: { LOG_LEVEL: 'warn' } });
      try {
        results.push(...(await throughGateway('fleet', fleet.url, adminToken)));
      } finally {
        await fleet.stop();
      }
    }
  } finally {
    for (const c of children) c.kill('SIGTERM');
  }

  const direct = new Map(results.filter((r) => r.target === 'direct').map((r) => [r.connections, r]));
  const rows = results.map((r) => {
    const d = direct.get(r.connections)!;
    const overhead = r.target === 'direct' ? '' : `${(r.p50 - d.p50).toFixed(2)} ms p50, ${(d.rps / r.rps).toFixed(2)}x time per request`;
    return `| ${r.target} | ${r.connections} | ${Math.round(r.rps)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.errors + r.non2xx} | ${overhead} |`;
  });
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  process.stdout.write(
    [`\n${machine}; ${SECONDS} s per run`, '', '| target | connections | requests/s | p50 ms | p99 ms | errors | overhead over direct |', '|---|---|---|---|---|---|---|', ...rows, ''].join('\n'),
  );
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench failed: ${(e as Error).stack}\n`);
    process.exit(1);
  },
);
