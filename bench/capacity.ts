/**
 * `pnpm bench capacity`: what one request costs the local fleet (`pnpm fleet`), counted rather than timed, the inputs
 * of docs/capacity.md. For each scenario (BENCH_ROUTES; default chat, embeddings, chat-stream) it sends a warm-up, then
 * exactly BENCH_CAPACITY_REQUESTS (2000) requests with autocannon at BENCH_CONNECTIONS (50), and divides by the count:
 *
 * - each process's CPU time (utime + stime from /proc/<pid>/stat): CPU time, not wall time, so a loaded machine
 *   slows the run without changing the figure much; gross, and net of the process's idle rate (pollers, timers)
 *   measured over the settle before the count; and each process's RSS after the scenario;
 * - PostgreSQL, from the fleet's own throwaway database: pg_stat_database (transactions, rows written and read),
 *   pg_stat_user_tables (rows written and scans per table), and the WAL its relations' records and their
 *   transactions' commit records took (pg_walinspect over the run's LSN range, so other databases on a shared server
 *   do not count). pg_stat_statements would count statements, but needs shared_preload_libraries: not assumed.
 *   Backends publish their statistics up to 10 s after going idle (PostgreSQL 15), hence the settle before each read;
 * - Redis, from a redis-server this run starts on a free port, so INFO commandstats counts only the fleet: calls per
 *   command, and network bytes in and out;
 * - with BENCH_CAPACITY_BUS=kafka, the bytes each topic's log grew by on the broker the fleet starts under its data
 *   directory (on FLEET_KAFKA_PORT, or a free port), whose JVM's CPU is counted with the services'.
 *
 * At the end, each table's rows and bytes per row (pg_total_relation_size / rows), from which growth per request
 * follows. BENCH_REPLICAS=N runs every service as N replicas (`pnpm fleet --replicas N`). Requires psql,
 * redis-server and redis-cli on PATH.
 */
import { spawn, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fleetPorts, startFleet, type FleetOptions } from 'model-gateway/local-fleet';
import { type Counters, diff, infoField, netOfIdle, parseCommandstats, parseRows, perRequest } from './capacity-delta';
import type { LoadResult, LoadSpec } from './load';
import type { BenchOptions } from './options';
import { cpuMs, freePort, freePortSet, lineMatching, rssKb, runJsonChild, stopChild, track } from './procs';
import { SCENARIOS } from './scenarios';
import { benchAccount, startUpstream, writeGatewayConfig } from './targets';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** PostgreSQL 15's PGSTAT_IDLE_INTERVAL (10 s) and a margin: every backend has published its counters by then. */
const PG_STATS_SETTLE_MS = 11_500;
const PG_ADMIN = ['-h', '127.0.0.1', '-U', 'postgres', '-v', 'ON_ERROR_STOP=1', '-At', '-F', '|'];

function psql(db: string, sql: string): string {
  return execFileSync('psql', [...PG_ADMIN, '-d', db, '-c', sql], { encoding: 'utf8' });
}

/** A redis-server of this run's own: INFO then counts the fleet's commands and nothing else. */
async function startRedis(dir: string): Promise<{ port: number; pid: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  track(child);
  for (let i = 0; ; i++) {
    try {
      if (execFileSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() === 'PONG') break;
    } catch {
      /* not up yet */
    }
    if (i > 100) throw new Error('redis-server did not answer PING');
    await sleep(100);
  }
  return { port, pid: child.pid!, stop: () => stopChild(child) };
}

/** Bytes of each topic's log under a broker's data directory: its `<topic>-<partition>/` directories, summed. */
function kafkaTopicBytes(kafkaDir: string, prefix: string): Counters {
  const out: Counters = {};
  const walk = (d: string): number =>
    fs
      .readdirSync(d, { withFileTypes: true })
      .reduce((s, e) => s + (e.isDirectory() ? walk(path.join(d, e.name)) : fs.statSync(path.join(d, e.name)).size), 0);
  const scan = (d: string) => {
    if (!fs.existsSync(d)) return;
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      const m = /^(.*)-\d+$/.exec(e.name);
      if (m?.[1].startsWith(prefix))
        out[`kafka ${m[1].slice(prefix.length)} bytes`] = (out[`kafka ${m[1].slice(prefix.length)} bytes`] ?? 0) + walk(path.join(d, e.name));
      else scan(path.join(d, e.name));
    }
  };
  scan(kafkaDir);
  return out;
}

interface Probe {
  db: string;
  pids: Record<string, number>;
  redisPort: number;
  kafka?: { dir: string; prefix: string };
}

function cpuOf(p: Probe): Counters {
  return Object.fromEntries(Object.entries(p.pids).map(([name, pid]) => [`cpu ${name}`, cpuMs(pid)]));
}

function snapshot(p: Probe): { counters: Counters; walFlush: string } {
  const counters: Counters = cpuOf(p);
  Object.assign(
    counters,
    parseRows(
      psql(
        'postgres',
        `select 'db', xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_returned, tup_fetched, blks_hit + blks_read from pg_stat_database where datname = '${p.db}'`,
      ),
      'pg ',
      ['xact_commit', 'xact_rollback', 'tup_inserted', 'tup_updated', 'tup_deleted', 'tup_returned', 'tup_fetched', 'blocks_touched'],
    ),
    parseRows(
      psql(
        p.db,
        `select schemaname || '.' || relname, n_tup_ins, n_tup_upd, n_tup_del, coalesce(seq_scan, 0) + coalesce(idx_scan, 0) from pg_stat_user_tables`,
      ),
      'table ',
      ['ins', 'upd', 'del', 'scans'],
    ),
  );
  const stats = execFileSync('redis-cli', ['-p', String(p.redisPort), 'info', 'all'], { encoding: 'utf8' });
  for (const [cmd, calls] of Object.entries(parseCommandstats(stats))) counters[`redis ${cmd}`] = calls;
  counters['redisnet in bytes'] = infoField(stats, 'total_net_input_bytes');
  counters['redisnet out bytes'] = infoField(stats, 'total_net_output_bytes');
  if (p.kafka) Object.assign(counters, kafkaTopicBytes(p.kafka.dir, p.kafka.prefix));
  return { counters, walFlush: psql('postgres', 'select pg_current_wal_flush_lsn()').trim() };
}

/**
 * A temporary physical replication slot held by a psql session of this run: the server keeps the WAL from here on
 * until the session ends (the run's end, or its death), so pg_walinspect can still read the run's records after a
 * busy server's checkpoints would have recycled them.
 */
async function holdWal(): Promise<{ stop: () => Promise<void> }> {
  const child = spawn('psql', [...PG_ADMIN, '-d', 'postgres'], { stdio: ['pipe', 'pipe', 'inherit'] });
  track(child);
  const slot = `gw_capacity_${process.pid}`;
  child.stdin!.write(`select pg_create_physical_replication_slot('${slot}', true, true);\n`);
  await lineMatching(child, new RegExp(slot));
  return {
    stop: async () => {
      child.stdin!.end();
      await stopChild(child);
    },
  };
}

/** CPU ms so far of each PostgreSQL backend connected to the database, by pid (the server runs on this machine). */
function backendCpu(db: string): Record<string, number> {
  const pids = psql('postgres', `select pid from pg_stat_activity where datname = '${db}' and pid <> pg_backend_pid()`)
    .trim()
    .split('\n')
    .filter(Boolean);
  return Object.fromEntries(pids.map((pid) => [pid, cpuMs(Number(pid))]));
}

/** WAL records and bytes between two LSNs that this database's relations (and those transactions' commits) wrote. */
function walOf(db: string, from: string, to: string): Counters {
  const oid = psql('postgres', `select oid from pg_database where datname = '${db}'`).trim();
  const [records, bytes] = psql(
    db,
    `with r as (select * from pg_get_wal_records_info('${from}', '${to}')),
     mine as (select distinct xid from r where block_ref like '%/${oid}/%' and xid <> '0')
     select count(*), coalesce(sum(record_length), 0)
     from r where block_ref like '%/${oid}/%' or (resource_manager = 'Transaction' and xid in (select xid from mine))`,
  )
    .trim()
    .split('|')
    .map(Number);
  const all = Number(psql('postgres', `select pg_wal_lsn_diff('${to}', '${from}')`).trim());
  return { 'wal records': records, 'wal bytes': bytes, 'wal bytes (whole server, others included)': all };
}

interface ScenarioResult {
  name: string;
  requests: number;
  per: Counters;
  rssMiB: Record<string, number>;
  load: LoadResult;
}

async function runScenario(
  name: string,
  base: string,
  key: string,
  probe: Probe,
  opts: BenchOptions,
  requests: number,
  log: (l: string) => void,
): Promise<ScenarioResult> {
  const scenario = SCENARIOS.find((s) => s.name === name);
  if (!scenario || scenario.gateway === 'file') throw new Error(`capacity: no scenario ${name}`);
  const req = scenario.gateway;
  const spec = (amount: number): LoadSpec => ({
    url: `${base}${req.path}`,
    method: req.method,
    body: req.body === undefined ? undefined : JSON.stringify(req.body),
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    connections: opts.connections,
    seconds: 0,
    amount,
  });
  log(`${name}: warm-up of ${Math.ceil(requests / 4)} requests`);
  await runJsonChild<LoadResult>('load.ts', spec(Math.ceil(requests / 4)));
  // The settle doubles as the idle baseline: what each process burns doing nothing (pollers, timers), per ms.
  const idle0 = { at: performance.now(), cpu: cpuOf(probe) };
  await sleep(PG_STATS_SETTLE_MS);
  const before = snapshot(probe);
  const t0 = performance.now();
  log(`${name}: ${requests} requests at ${opts.connections} connections`);
  const backends0 = backendCpu(probe.db);
  const load = await runJsonChild<LoadResult>('load.ts', spec(requests));
  const backends = backendCpu(probe.db);
  // Read right after the count: the pools close idle connections after 10 s, and a closed backend's CPU is gone.
  const pgCpu = Object.entries(backends).reduce((sum, [pid, ms]) => sum + ms - (backends0[pid] ?? 0), 0);
  // A stray failure (the machine is shared) barely moves a per-request figure; more than 1 % would, so it stops the run.
  if (load.non2xx + load.errors > load.requests / 100) throw new Error(`${name}: ${load.non2xx} non-2xx, ${load.errors} errors`);
  const rssMiB = Object.fromEntries(Object.entries(probe.pids).map(([n, pid]) => [n, rssKb(pid) / 1024]));
  await sleep(PG_STATS_SETTLE_MS);
  const after = snapshot(probe);
  const delta = {
    ...diff(before.counters, after.counters),
    ...walOf(probe.db, before.walFlush, after.walFlush),
    // Only over the count (see above), so it has no idle share to take off.
    'cpu postgres backends': pgCpu,
    'net cpu postgres backends': pgCpu,
    ...netOfIdle(diff(idle0.cpu, before.counters), t0 - idle0.at, diff(before.counters, after.counters), performance.now() - t0),
  };
  // The settles are idle time: the processes' idle CPU over them is counted in, a small overstatement, stated.
  return { name, requests: load.requests, per: perRequest(delta, load.requests), rssMiB, load };
}

function report(results: ScenarioResult[], tables: string, header: string): string {
  const names = results.map((r) => r.name);
  const keys = [...new Set(results.flatMap((r) => Object.keys(r.per)))].sort();
  const section = (title: string, prefix: string, digits: number) => {
    const ks = keys.filter((k) => k.startsWith(prefix) && results.some((r) => (r.per[k] ?? 0) !== 0));
    if (!ks.length) return [];
    return [
      '',
      `${title}:`,
      '',
      `| | ${names.join(' | ')} |`,
      `|---|${names.map(() => '---:').join('|')}|`,
      ...ks.map((k) => `| ${k.slice(prefix.length)} | ${results.map((r) => (r.per[k] === undefined ? '' : r.per[k].toFixed(digits))).join(' | ')} |`),
    ];
  };
  const cpuKeys = keys.filter((k) => k.startsWith('cpu '));
  const totals = results.map((r) => cpuKeys.reduce((s, k) => s + (r.per[k] ?? 0), 0));
  const netTotals = results.map((r) => cpuKeys.reduce((s, k) => s + (r.per[`net ${k}`] ?? 0), 0));
  const procs = Object.keys(results[0].rssMiB);
  return [
    '',
    header,
    '',
    `| | ${names.join(' | ')} |`,
    `|---|${names.map(() => '---:').join('|')}|`,
    `| requests counted | ${results.map((r) => r.requests).join(' | ')} |`,
    `| of which failed (non-2xx or errors) | ${results.map((r) => r.load.non2xx + r.load.errors).join(' | ')} |`,
    `| req/s during the count (loaded machine: not a capacity figure) | ${results.map((r) => r.load.rps.toFixed(0)).join(' | ')} |`,
    ...section('CPU ms per request, by process (utime + stime), gross', 'cpu ', 3),
    `| **total** | ${totals.map((t) => `**${t.toFixed(3)}**`).join(' | ')} |`,
    ...section('CPU ms per request, by process, net of its idle CPU (measured over the settle before the count)', 'net cpu ', 3),
    `| **total** | ${netTotals.map((t) => `**${t.toFixed(3)}**`).join(' | ')} |`,
    '',
    'RSS after each scenario (MiB):',
    '',
    `| | ${names.join(' | ')} |`,
    `|---|${names.map(() => '---:').join('|')}|`,
    ...procs.map((p) => `| ${p} | ${results.map((r) => r.rssMiB[p].toFixed(0)).join(' | ')} |`),
    ...section('PostgreSQL per request (this database; WAL from pg_walinspect)', 'pg ', 3),
    ...section('', 'wal ', 1).slice(2),
    ...section('Rows written and scans per request, by table', 'table ', 3),
    ...section('Redis calls per request, by command', 'redis ', 3),
    ...section('Redis network bytes per request', 'redisnet ', 0),
    ...section('Kafka log bytes per request, by topic', 'kafka ', 0),
    '',
    'Tables at the end (rows, bytes with indexes and TOAST, bytes per row):',
    '',
    '| table | rows | bytes | bytes/row |',
    '|---|---:|---:|---:|',
    tables,
    '',
    `Gross CPU includes each process's idle CPU over the count and the ${PG_STATS_SETTLE_MS / 1000} s settle after it; net subtracts that process's idle rate over the same span.`,
    '',
  ].join('\n');
}

export async function benchCapacity(opts: BenchOptions, log: (l: string) => void): Promise<string> {
  const requests = Math.max(100, Math.round(Number(process.env.BENCH_CAPACITY_REQUESTS || 2000)));
  const bus = process.env.BENCH_CAPACITY_BUS === 'kafka' ? 'kafka' : 'redis';
  const replicas = Math.max(1, Math.round(Number(process.env.BENCH_REPLICAS || 1)));
  const routes = process.env.BENCH_ROUTES ? opts.routes : ['chat', 'embeddings', 'chat-stream'];
  const dir = fs.mkdtempSync(path.join(opts.dataRoot, 'gw-capacity-'));
  const db = `gw_cap_${crypto.randomBytes(4).toString('hex')}`;
  const upstream = await startUpstream();
  const redis = await startRedis(dir);
  const dataDir = path.join(dir, 'fleet-data');
  const adminToken = `bench-${crypto.randomBytes(8).toString('hex')}`;
  const load = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  const loadBefore = load();
  const fleetOpts: FleetOptions = {
    port: await freePortSet((p) => fleetPorts(p, replicas)),
    configPath: writeGatewayConfig(dir, upstream.url),
    adminToken,
    databaseUrl: `postgres://postgres@127.0.0.1:5432/${db}`,
    redisUrl: `redis://127.0.0.1:${redis.port}`,
    dropDatabaseOnStop: true,
    logDir: dir,
    dataDir,
    logLevel: opts.logLevel as 'info',
    replicas,
    ...(bus === 'kafka' ? { bus, kafkaPort: Number(process.env.FLEET_KAFKA_PORT) || (await freePortSet((p) => [p, p + 1])) } : {}),
  };
  log(`fleet on ${bus}, ${replicas} replica(s) per service, database ${db}`);
  const fleet = await startFleet(fleetOpts);
  let wal: { stop: () => Promise<void> } | undefined;
  try {
    for (const p of Object.values(fleet.processes)) track(p);
    psql(db, 'create extension if not exists pg_walinspect');
    wal = await holdWal();
    const pids = Object.fromEntries(Object.entries(fleet.processes).map(([n, p]) => [n, p.pid!]));
    if (fleet.kafka?.pid) pids['kafka broker (JVM)'] = fleet.kafka.pid;
    pids['redis-server'] = redis.pid;
    const probe: Probe = {
      db,
      pids,
      redisPort: redis.port,
      kafka: bus === 'kafka' ? { dir: path.join(dataDir, 'kafka'), prefix: `${db}.` } : undefined,
    };
    const key = await benchAccount(fleet.url, adminToken);
    const results: ScenarioResult[] = [];
    for (const name of routes) results.push(await runScenario(name, fleet.url, key, probe, opts, requests, log));
    const tables = psql(
      db,
      `select schemaname || '.' || relname, n_live_tup, pg_total_relation_size(relid),
              case when n_live_tup > 0 then pg_total_relation_size(relid) / n_live_tup end
       from pg_stat_user_tables where n_live_tup > 0 order by pg_total_relation_size(relid) desc`,
    )
      .trim()
      .split('\n')
      .map((l) => `| ${l.split('|').join(' | ')} |`)
      .join('\n');
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const header = `Capacity (\`pnpm bench capacity\`): commit ${commit}, ${new Date().toISOString()}, fleet on PostgreSQL and ${bus === 'kafka' ? 'Kafka' : 'Redis Streams'}, ${replicas} replica(s) per service, LOG_LEVEL ${opts.logLevel}, ${os.cpus().length} cores, Node ${process.version}, load average ${loadBefore} before, ${load()} after; ${requests} requests per scenario at ${opts.connections} connections after a warm-up of ${Math.ceil(requests / 4)}.`;
    return report(results, tables, header);
  } finally {
    await wal?.stop();
    await fleet.stop();
    await redis.stop();
    await stopChild(upstream.child);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
