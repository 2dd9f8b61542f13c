/**
 * `pnpm bench hops`: where the fleet's time goes at one connection, leg by leg of a non-streamed chat. Each leg is
 * called one request at a time, in turns with the others, round after round (BENCH_ROUNDS), BENCH_ROUTE_SECONDS
 * each after BENCH_WARMUP:
 *
 * - `upstream`: the zero upstream's chat, straight (what every other leg includes once);
 * - `redis ping`: a round trip to a server that does nothing, the floor of any hop on this machine;
 * - `postgres select 1`: the same to PostgreSQL;
 * - `place_hold`: billing's ledger function as billing runs it, one statement and its commit;
 * - `billing hold`: billing's `POST /internal/holds`: that, plus billing's HTTP, validation and batcher;
 * - `text`: the chat sent to text as the edge forwards it: the hold, the upstream call and the answer;
 * - `edge`: the whole call, as a client makes it.
 *
 * The per-layer figures are differences of medians, so they are estimates; the legs themselves are measured. Beside
 * each leg, the CPU time per call of each group of processes (/proc, the processes alive throughout the leg): at one
 * connection what a call costs each process is most of what it adds to the latency.
 * BENCH_TARGETS=fleet-kafka runs the fleet on Kafka (KAFKA_BROKERS, or a broker started for the run).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { openPg } from '@gateway/db';
import { fleetPorts, startFleet } from 'model-gateway/local-fleet';
import { Pool } from 'undici';
import type { BenchOptions } from './options';
import { cpuMs, freePortSet, track } from './procs';
import { machineLine } from './report';
import { DIRECT } from './scenarios';
import { Samples, median, type LatencySummary } from './stats';
import { benchAccount, startUpstream, writeGatewayConfig } from './targets';

/** How long the whole call runs at BENCH_CONNECTIONS before the first leg is measured. */
const WARM_UP_SECONDS = 10;

export const LEGS = ['upstream', 'redis ping', 'postgres select 1', 'place_hold', 'billing hold', 'text', 'edge'] as const;
export type Leg = (typeof LEGS)[number];

/** One call of a leg; resolves when its answer has been read whole. */
type Call = () => Promise<void>;

/** Whose CPU each leg's calls are charged to: the fleet's processes by service, and the engines' processes. */
export const CPU_GROUPS = ['edge', 'text', 'billing', 'other services', 'postgres', 'redis', 'kafka'] as const;
export type CpuGroup = (typeof CPU_GROUPS)[number];

/** One leg's figures in one round: its latency, and the CPU each group used per call while it ran. */
export interface LegRun {
  latency: LatencySummary;
  cpuMsPerCall: Record<CpuGroup, number>;
}

/** What each layer adds, from the legs' medians: the layer's leg less the legs it contains. */
export function layers(p50: Record<Leg, number>): { layer: string; ms: number }[] {
  return [
    { layer: 'a hop to a server that does nothing (redis ping)', ms: p50['redis ping'] },
    { layer: 'the commit and statements of place_hold, over a PostgreSQL round trip', ms: p50.place_hold - p50['postgres select 1'] },
    { layer: "billing's HTTP, validation and batcher, over place_hold", ms: p50['billing hold'] - p50.place_hold },
    {
      layer: "text's own work and its two hops (billing, upstream), over the hold and the upstream",
      ms: p50.text - p50['billing hold'] - p50.upstream,
    },
    { layer: 'the edge (key, meter, one more hop), over text', ms: p50.edge - p50.text },
  ];
}

/**
 * The report: each leg's median over the rounds' p50s, its mean, each round's p50, and the CPU per call of each
 * group (the median of the rounds); then the layers.
 */
export function hopsReport(rounds: Record<Leg, LegRun>[]): string {
  const p50 = Object.fromEntries(LEGS.map((l) => [l, median(rounds.map((r) => r[l].latency.p50))])) as Record<Leg, number>;
  const ms = (n: number) => n.toFixed(3);
  const of = (l: Leg, pick: (s: LatencySummary) => number) => median(rounds.map((r) => pick(r[l].latency)));
  const cpu = (l: Leg) => CPU_GROUPS.map((g) => median(rounds.map((r) => r[l].cpuMsPerCall[g])).toFixed(2)).join(' / ');
  return [
    `| leg | p50 ms (median of rounds) | mean ms (median) | p99 ms (median) | calls per round | p50 each round | CPU ms per call: ${CPU_GROUPS.join(' / ')} |`,
    '|---|---:|---:|---:|---:|---|---|',
    ...LEGS.map(
      (l) =>
        `| ${l} | ${ms(p50[l])} | ${ms(of(l, (s) => s.mean))} | ${ms(of(l, (s) => s.p99))} | ${Math.round(of(l, (s) => s.count))} | ${rounds.map((r) => ms(r[l].latency.p50)).join(', ')} | ${cpu(l)} |`,
    ),
    '',
    '| what it adds (differences of the medians above) | ms |',
    '|---|---:|',
    ...layers(p50).map((x) => `| ${x.layer} | ${ms(x.ms)} |`),
    '',
  ].join('\n');
}

/** The processes of each CPU group, found again before every leg (PostgreSQL starts a backend per connection). */
type Processes = () => Record<CpuGroup, number[]>;

/** The pids whose command name (/proc/<pid>/comm) is `comm`, and whose command line holds `arg` when given. */
function pidsNamed(comm: string, arg?: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== comm) continue;
      if (!arg || fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(arg)) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/** Calls one leg one request at a time for `seconds`, after `warmupSeconds` of the same. */
async function measure(call: Call, seconds: number, warmupSeconds: number, processes: Processes): Promise<LegRun> {
  for (const end = Date.now() + warmupSeconds * 1000; Date.now() < end; ) await call();
  const groups = processes();
  const before = new Map(CPU_GROUPS.flatMap((g) => groups[g].map((pid) => [pid, cpuMs(pid)] as const)));
  const samples = new Samples();
  for (const end = Date.now() + seconds * 1000; Date.now() < end; ) {
    const t = process.hrtime.bigint();
    await call();
    samples.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  const latency = samples.summary();
  // Only the processes alive at both ends count: a PostgreSQL backend that exited took its CPU time with it.
  const used = (pid: number) => {
    const now = cpuMs(pid);
    return now > 0 ? now - (before.get(pid) ?? 0) : 0;
  };
  const cpuMsPerCall = Object.fromEntries(CPU_GROUPS.map((g) => [g, groups[g].reduce((sum, pid) => sum + used(pid), 0) / latency.count])) as Record<
    CpuGroup,
    number
  >;
  return { latency, cpuMsPerCall };
}

/** An HTTP leg over one keep-alive connection: any answer but the expected status fails the run. */
function httpCall(pool: Pool, expected: number, request: () => { path: string; headers: Record<string, string>; body: string }): Call {
  return async () => {
    const r = request();
    const res = await pool.request({ method: 'POST', ...r });
    const text = await res.body.text();
    if (res.statusCode !== expected) throw new Error(`${r.path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  };
}

/** Redis's inline PING over a raw socket: no client library between the bench and the round trip. */
async function redisPing(url: string): Promise<{ call: Call; close(): void }> {
  const u = new URL(url);
  const socket = net.connect({ host: u.hostname, port: Number(u.port || 6379), noDelay: true });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let waiting: (() => void) | undefined;
  socket.on('data', () => waiting?.());
  return {
    call: () =>
      new Promise<void>((resolve) => {
        waiting = resolve;
        socket.write('PING\r\n');
      }),
    close: () => socket.destroy(),
  };
}

export async function benchHops(opts: BenchOptions, log: (line: string) => void): Promise<string> {
  const bus = opts.targets.length === 1 && opts.targets[0] === 'fleet-kafka' ? 'kafka' : 'redis';
  const dir = fs.mkdtempSync(path.join(opts.dataRoot, 'gw-bench-hops-'));
  const upstream = await startUpstream();
  const adminToken = `bench-${crypto.randomBytes(8).toString('hex')}`;
  const internalToken = crypto.randomBytes(24).toString('hex');
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  log(`fleet on ${bus === 'kafka' ? 'Kafka' : 'Redis Streams'}: starting`);
  const fleet = await startFleet({
    port: await freePortSet(fleetPorts),
    configPath: writeGatewayConfig(dir, upstream.url),
    adminToken,
    databaseUrl: `postgres://postgres@127.0.0.1:5432/gw_bench_${crypto.randomBytes(4).toString('hex')}`,
    dropDatabaseOnStop: true,
    logDir: dir,
    dataDir: path.join(dir, 'fleet-data'),
    logLevel: opts.logLevel as 'info',
    redisUrl,
    bus,
    ...(bus === 'kafka' ? { kafkaBrokers: process.env.KAFKA_BROKERS || undefined, kafkaPort: await freePortSet((p) => [p, p + 1]) } : {}),
    // The bench calls billing and text as the edge does, so it needs the token the edge sends.
    env: { GATEWAY_INTERNAL_TOKEN: internalToken },
  });
  for (const p of Object.values(fleet.processes)) track(p);
  const pools: Pool[] = [];
  const pool = (url: string) => {
    const p = new Pool(url, { connections: 1 });
    pools.push(p);
    return p;
  };
  const ledger = openPg(fleet.databaseUrl, 'billing', { max: 1 });
  const redis = await redisPing(redisUrl);
  try {
    const key = await benchAccount(fleet.url, adminToken);
    const json = { 'content-type': 'application/json' };
    const internal = { ...json, 'x-gateway-internal-token': internalToken };
    const billing = pool(fleet.addresses.billing);
    const verify = await billing.request({
      method: 'POST',
      path: '/internal/keys/verify',
      headers: internal,
      body: JSON.stringify({ key }),
    });
    const { accountId, keyId, rateLimit } = (
      (await verify.body.json()) as { data: { accountId: string; keyId: string; rateLimit: { requests: number; intervalMs: number } } }
    ).data;
    const run = crypto.randomBytes(4).toString('hex');
    // Request ids are never reused, across legs and rounds: a finished one is refused (409), as for any client.
    let seq = 0;
    const next = () => `${run}_${seq++}`;
    const chat = JSON.stringify({ model: 'bench/echo', messages: [{ role: 'user', content: 'ping' }], max_tokens: 16 });
    // Holds the bench places itself are never closed: 1,000 nano-USD each, released by the sweeper a minute later.
    const hold = () => ({ accountId, keyId, requestId: `req_hops_${next()}`, amountNano: '1000', model: 'bench/echo', ttlMs: 60_000 });
    const edgeRequest = () => ({ path: '/v1/chat/completions', headers: { ...json, authorization: `Bearer ${key}` }, body: chat });
    const text = pool(fleet.addresses.text);
    const edge = pool(fleet.url);
    const up = pool(upstream.url);
    const legs: Record<Leg, Call> = {
      upstream: httpCall(up, 200, () => ({ path: DIRECT.chat.path, headers: json, body: JSON.stringify(DIRECT.chat.body) })),
      'redis ping': redis.call,
      'postgres select 1': async () => void (await ledger.query('SELECT 1')),
      place_hold: async () => {
        const h = hold();
        await ledger.query('SELECT * FROM place_hold($1, $2, $3, $4, NULL, $5, $6, $7)', [
          `hold_${h.requestId}`,
          h.accountId,
          h.keyId,
          h.requestId,
          h.model,
          h.amountNano,
          h.ttlMs,
        ]);
      },
      'billing hold': httpCall(billing, 201, () => ({ path: '/internal/holds', headers: internal, body: JSON.stringify(hold()) })),
      text: httpCall(text, 200, () => ({
        path: '/v1/chat/completions',
        headers: {
          ...internal,
          'x-gateway-account-id': accountId,
          'x-gateway-key-id': keyId,
          'x-gateway-request-id': `req_hops_${next()}`,
          'x-gateway-started-at': String(Date.now()),
          'x-gateway-rate-limit': `${rateLimit.requests}/${rateLimit.intervalMs}`,
        },
        body: chat,
      })),
      edge: httpCall(edge, 200, edgeRequest),
    };
    const services = Object.entries(fleet.processes).map(([name, child]) => ({ name, pid: child.pid as number }));
    const pidsOf = (names: string[]) => services.filter((s) => names.includes(s.name)).map((s) => s.pid);
    const processes: Processes = () => ({
      edge: pidsOf(['edge']),
      text: pidsOf(['text']),
      billing: pidsOf(['billing']),
      'other services': services.filter((s) => !['edge', 'text', 'billing'].includes(s.name)).map((s) => s.pid),
      postgres: pidsNamed('postgres'),
      redis: pidsNamed('redis-server'),
      // The broker's JVM, whether the fleet started it or KAFKA_BROKERS names one on this machine (deploy/kafka's).
      kafka: bus === 'kafka' ? pidsNamed('java', 'kafka') : [],
    });
    // V8 optimises what runs often: before the first figure, the whole call runs as `pnpm bench` runs it before its
    // one-connection figures, at BENCH_CONNECTIONS at once, so no leg is measured on code still being compiled.
    const busy = new Pool(fleet.url, { connections: opts.connections });
    pools.push(busy);
    const edgeChat = httpCall(busy, 200, edgeRequest);
    log(`warming up: chat through the edge at ${opts.connections} connections for ${WARM_UP_SECONDS} s`);
    const warmUntil = Date.now() + WARM_UP_SECONDS * 1000;
    await Promise.all(
      Array.from({ length: opts.connections }, async () => {
        while (Date.now() < warmUntil) await edgeChat();
      }),
    );
    const rounds: Record<Leg, LegRun>[] = [];
    for (let r = 1; r <= opts.rounds; r++) {
      const round = {} as Record<Leg, LegRun>;
      for (const leg of LEGS) {
        round[leg] = await measure(legs[leg], opts.routeSeconds, opts.warmupSeconds, processes);
        log(`round ${r}, ${leg}: p50 ${round[leg].latency.p50.toFixed(3)} ms over ${round[leg].latency.count} calls`);
      }
      rounds.push(round);
    }
    return [
      '',
      // The machine and commit; its third line describes the comparison run's figures, not these.
      machineLine(opts, dir).split('\n').slice(0, 2).join('\n'),
      `fleet on ${bus === 'kafka' ? 'Kafka' : 'PostgreSQL and Redis Streams'}; one request at a time per leg, the legs in turns, ${opts.rounds} round(s) of ${opts.routeSeconds} s each after ${opts.warmupSeconds} s of warm-up`,
      '',
      hopsReport(rounds),
    ].join('\n');
  } finally {
    redis.close();
    await ledger.close();
    await Promise.all(pools.map((p) => p.close()));
    await fleet.stop();
    upstream.child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
