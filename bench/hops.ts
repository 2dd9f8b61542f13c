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
 * The per-layer figures are differences of medians, so they are estimates; the legs themselves are measured.
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
import { freePortSet, track } from './procs';
import { machineLine } from './report';
import { DIRECT } from './scenarios';
import { Samples, type LatencySummary } from './stats';
import { benchAccount, startUpstream, writeGatewayConfig } from './targets';

export const LEGS = ['upstream', 'redis ping', 'postgres select 1', 'place_hold', 'billing hold', 'text', 'edge'] as const;
export type Leg = (typeof LEGS)[number];

/** One call of a leg; resolves when its answer has been read whole. */
type Call = (i: number) => Promise<void>;

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

/** The report: each leg's median over the rounds' p50s, its mean, and each round's p50; then the layers. */
export function hopsReport(rounds: Record<Leg, LatencySummary>[]): string {
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const p50 = Object.fromEntries(LEGS.map((l) => [l, median(rounds.map((r) => r[l].p50))])) as Record<Leg, number>;
  const ms = (n: number) => n.toFixed(3);
  return [
    '| leg | p50 ms (median of rounds) | mean ms (median) | p99 ms (median) | calls per round | p50 each round |',
    '|---|---:|---:|---:|---:|---|',
    ...LEGS.map(
      (l) =>
        `| ${l} | ${ms(p50[l])} | ${ms(median(rounds.map((r) => r[l].mean)))} | ${ms(median(rounds.map((r) => r[l].p99)))} | ${Math.round(median(rounds.map((r) => r[l].count)))} | ${rounds.map((r) => ms(r[l].p50)).join(', ')} |`,
    ),
    '',
    '| what it adds (differences of the medians above) | ms |',
    '|---|---:|',
    ...layers(p50).map((x) => `| ${x.layer} | ${ms(x.ms)} |`),
    '',
  ].join('\n');
}

/** Calls one leg one request at a time for `seconds`, after `warmupSeconds` of the same. */
async function measure(call: Call, seconds: number, warmupSeconds: number): Promise<LatencySummary> {
  let i = 0;
  for (const end = Date.now() + warmupSeconds * 1000; Date.now() < end; ) await call(i++);
  const samples = new Samples();
  for (const end = Date.now() + seconds * 1000; Date.now() < end; ) {
    const t = process.hrtime.bigint();
    await call(i++);
    samples.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return samples.summary();
}

/** An HTTP leg over one keep-alive connection: any answer but the expected status fails the run. */
function httpCall(pool: Pool, expected: number, request: (i: number) => { path: string; headers: Record<string, string>; body: string }): Call {
  return async (i) => {
    const r = request(i);
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
    const verify = await pool(fleet.addresses.billing).request({
      method: 'POST',
      path: '/internal/keys/verify',
      headers: internal,
      body: JSON.stringify({ key }),
    });
    const { accountId, keyId, rateLimit } = (
      (await verify.body.json()) as { data: { accountId: string; keyId: string; rateLimit: { requests: number; intervalMs: number } } }
    ).data;
    const run = crypto.randomBytes(4).toString('hex');
    const chat = JSON.stringify({ model: 'bench/echo', messages: [{ role: 'user', content: 'ping' }], max_tokens: 16 });
    // Holds the bench places itself are never closed: 1,000 nano-USD each, released by the sweeper a minute later.
    const hold = (i: number) => ({ accountId, keyId, requestId: `req_hops_${run}_${i}`, amountNano: '1000', model: 'bench/echo', ttlMs: 60_000 });
    const billing = pool(fleet.addresses.billing);
    const text = pool(fleet.addresses.text);
    const edge = pool(fleet.url);
    const up = pool(upstream.url);
    const legs: Record<Leg, Call> = {
      upstream: httpCall(up, 200, () => ({ path: DIRECT.chat.path, headers: json, body: JSON.stringify(DIRECT.chat.body) })),
      'redis ping': redis.call,
      'postgres select 1': async () => void (await ledger.query('SELECT 1')),
      place_hold: async (i) => {
        const h = hold(i);
        await ledger.query('SELECT * FROM place_hold($1, $2, $3, $4, NULL, $5, $6, $7)', [
          `hold_hops_${run}_${i}`,
          h.accountId,
          h.keyId,
          `req_hops_pg_${run}_${i}`,
          h.model,
          h.amountNano,
          h.ttlMs,
        ]);
      },
      'billing hold': httpCall(billing, 201, (i) => ({ path: '/internal/holds', headers: internal, body: JSON.stringify(hold(i)) })),
      text: httpCall(text, 200, (i) => ({
        path: '/v1/chat/completions',
        headers: {
          ...internal,
          'x-gateway-account-id': accountId,
          'x-gateway-key-id': keyId,
          'x-gateway-request-id': `req_hops_text_${run}_${i}`,
          'x-gateway-started-at': String(Date.now()),
          'x-gateway-rate-limit': `${rateLimit.requests}/${rateLimit.intervalMs}`,
        },
        body: chat,
      })),
      edge: httpCall(edge, 200, () => ({ path: '/v1/chat/completions', headers: { ...json, authorization: `Bearer ${key}` }, body: chat })),
    };
    const rounds: Record<Leg, LatencySummary>[] = [];
    for (let r = 1; r <= opts.rounds; r++) {
      const round = {} as Record<Leg, LatencySummary>;
      for (const leg of LEGS) {
        round[leg] = await measure(legs[leg], opts.routeSeconds, opts.warmupSeconds);
        log(`round ${r}, ${leg}: p50 ${round[leg].p50.toFixed(3)} ms over ${round[leg].count} calls`);
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
