/**
 * `pnpm bench`: the gateway against its peers in one run, each in its own process, all in front of one zero-latency
 * upstream (bench/zero-upstream.mjs): direct (the upstream alone), Portkey's open-source gateway, the embedded
 * gateway (`pnpm start`) and the local fleet (`pnpm fleet`) with its events on Redis Streams and on Kafka (`fleet-kafka`:
 * KAFKA_BROKERS, or deploy/kafka's broker started for the run, whose JVM then counts in the target's figures). Scenarios: chat, streamed chat (time to first byte and
 * to the last) and embeddings, each at BENCH_CONNECTIONS (50) and at 1. The load generators run in child processes
 * (bench/load.ts: autocannon; bench/stream-load.ts: undici), never in this one. Prints a markdown table per kind and
 * the ratios; docs/benchmarks.md explains every option.
 *
 * `pnpm bench --profile` (BENCH_PROFILE=1) profiles the embedded gateway under chat at BENCH_CONNECTIONS instead
 * (bench/profile.ts); with BENCH_TARGETS=fleet, the fleet's processes. `pnpm bench bus` measures the memory event bus alone (bench/bus.ts),
 * `pnpm bench ledger` the embedded write-behind's ledger_write (bench/ledger-write.ts);
 * `pnpm bench ab [rev]` this checkout's embedded gateway against another commit's, in turns (bench/ab.ts);
 * `pnpm bench startup` the embedded gateway's start, idle memory and CPU, and peak memory under chat (bench/startup.ts);
 * `pnpm bench capacity` the fleet's CPU, memory, PostgreSQL, Redis and Kafka work per request (bench/capacity.ts);
 * `pnpm bench hops` the fleet's call at one connection, leg by leg: upstream, Redis, place_hold, billing, text, edge (bench/hops.ts).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { benchAb } from './ab';
import { benchBus } from './bus';
import { benchCapacity } from './capacity';
import { benchHops } from './hops';
import { benchLedgerWrite } from './ledger-write';
import { measureInTurns, verifyTarget } from './measure';
import { readOptions, type BenchOptions, type TargetName } from './options';
import { killAllChildren, stopChild } from './procs';
import { profileGateway } from './profile';
import { machineLine, ratios, roundsBlock, tables, type Row } from './report';
import { selectScenarios } from './scenarios';
import { benchStartup } from './startup';
import {
  directTarget,
  startEmbedded,
  startFleetTarget,
  startPortkey,
  startUpstream,
  writeGatewayConfig,
  type Target,
  type Upstream,
} from './targets';

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

async function startTarget(
  name: TargetName,
  upstream: Upstream,
  opts: BenchOptions,
  dir: string,
  configPath: string,
  adminToken: string,
): Promise<Target> {
  switch (name) {
    case 'direct':
      return directTarget(upstream);
    case 'portkey':
      return startPortkey(upstream.url);
    case 'embedded':
      return startEmbedded({ configPath, adminToken, dataDir: path.join(dir, 'data'), logLevel: opts.logLevel });
    case 'fleet':
      return startFleetTarget({ configPath, adminToken, logDir: dir, dataDir: path.join(dir, 'fleet-data'), logLevel: opts.logLevel });
    case 'fleet-kafka':
      return startFleetTarget({
        configPath,
        adminToken,
        logDir: dir,
        dataDir: path.join(dir, 'fleet-kafka-data'),
        logLevel: opts.logLevel,
        bus: 'kafka',
      });
  }
}

async function compare(opts: BenchOptions, upstream: Upstream, dir: string, configPath: string, adminToken: string): Promise<string> {
  const scenarios = selectScenarios(opts);
  // Every target up at once, measured in turns (measure.ts): a drifting machine slows them alike.
  const targets: Target[] = [];
  let rows: Row[];
  try {
    for (const name of opts.targets) {
      const started = Date.now();
      log(`${name}: starting`);
      const target = await startTarget(name, upstream, opts, dir, configPath, adminToken);
      targets.push(target);
      await verifyTarget(target, scenarios);
      log(`${name}: up and proxying in ${Math.round((Date.now() - started) / 1000)} s`);
    }
    rows = await measureInTurns(targets, scenarios, opts, upstream, log);
  } finally {
    for (const t of targets.reverse()) await t.stop();
  }
  const ratioBlock = ratios(rows, opts.connections);
  const rounds = roundsBlock(rows);
  return [
    '',
    machineLine(opts, dir),
    '',
    tables(rows),
    '',
    ...(ratioBlock ? ['Ratios:', '', ratioBlock, ''] : []),
    ...(rounds ? ['Each round, in the order taken:', '', rounds, ''] : []),
    "CPU %: of one core (200 = both cores), for the target's own processes, the upstream, the load generator and the other targets (up and waiting) during the run.",
    '',
  ].join('\n');
}

async function main(): Promise<string> {
  const opts = readOptions(process.argv.slice(2), process.env);
  const dir = fs.mkdtempSync(path.join(opts.dataRoot, 'gw-bench-'));
  const upstream = await startUpstream();
  const configPath = writeGatewayConfig(dir, upstream.url);
  const adminToken = `bench-${crypto.randomBytes(8).toString('hex')}`;
  try {
    return opts.profile
      ? await profileGateway(opts, { configPath, adminToken, dataDir: path.join(dir, 'data'), workDir: dir }, log)
      : // The start-up figures first, while none of the comparison's targets is up to load the machine.
        (opts.startup ? await benchStartup(opts, log) : '') + (await compare(opts, upstream, dir, configPath, adminToken));
  } finally {
    await stopChild(upstream.child);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    killAllChildren();
    process.exit(130);
  });

const command = process.argv[2];
const run =
  command === 'bus'
    ? benchBus()
    : command === 'ledger'
      ? benchLedgerWrite()
      : command === 'ab'
        ? benchAb(readOptions([], process.env), process.argv[3] ?? 'HEAD', log)
        : command === 'startup'
          ? benchStartup(readOptions([], process.env), log)
          : command === 'capacity'
            ? benchCapacity(readOptions([], process.env), log)
            : command === 'hops'
              ? benchHops(readOptions([], process.env), log)
              : main();
run.then(
  (out) => {
    process.stdout.write(out);
    process.exit(0);
  },
  (e) => {
    process.stderr.write(`bench failed: ${(e as Error).stack}\n`);
    killAllChildren();
    process.exit(1);
  },
);
