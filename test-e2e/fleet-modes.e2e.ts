import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EDGE, SERVICES } from '@gateway/topology';
import { type Fleet, startFleet } from '../deploy/local-fleet';
import { onFleetPorts, PG_URL } from './support/harness';
import { ROOT, runEntry } from './support/process';

/**
 * The modes a fleet cannot settle in, refused by every command the containers run (issue 32). A fleet process on
 * the in-memory bus, or on none (which used to mean the in-memory one), publishes its settles where billing, in
 * another process, never reads them: every hold expired uncharged. A process without GATEWAY_CONFIG served the
 * built-in simulated demo catalogue, and billed real accounts for its made-up answers; so did one given the copy
 * of it that k8s/gateway-config.yaml ships. Each now exits 1 naming the variable, unless the operator consents to
 * the demo (GATEWAY_DEMO_CATALOGUE=true), which `pnpm fleet` gives the processes it starts.
 */
const PROCESSES = [EDGE.name, ...SERVICES.map((s) => s.name)];
/** A port nothing listens on: the peers and stores a process is given are never reached before it refuses to start. */
const NOWHERE = 'http://127.0.0.1:9';
/** Everything a fleet process needs, with a real catalogue: each case below takes one thing away or changes it. */
const COMPLETE = {
  GATEWAY_INTERNAL_TOKEN: crypto.randomBytes(24).toString('hex'),
  PORT: '0',
  METRICS_PORT: '0',
  HOST: '127.0.0.1',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:9/nowhere',
  REDIS_URL: 'redis://127.0.0.1:9',
  BUS: 'redis',
  GATEWAY_CONFIG: path.join(ROOT, 'k8s/gateway-config.yaml'),
  GATEWAY_DEMO_CATALOGUE: 'true',
  EDGE_URL: NOWHERE,
  ...Object.fromEntries(SERVICES.map((s) => [s.urlEnv, NOWHERE])),
};

const CASES: Array<{ name: string; env: Record<string, string>; names: string }> = [
  { name: 'BUS=memory', env: { BUS: 'memory' }, names: 'BUS: "memory" cannot carry events between processes' },
  { name: 'BUS unset', env: { BUS: '' }, names: 'BUS: required for the' },
  { name: 'BUS=redis without REDIS_URL', env: { REDIS_URL: '' }, names: 'REDIS_URL: required with BUS=redis' },
  {
    name: 'no GATEWAY_CONFIG and no consent (the built-in demo catalogue)',
    env: { GATEWAY_CONFIG: '', GATEWAY_DEMO_CATALOGUE: '' },
    names: 'GATEWAY_CONFIG: required for the',
  },
  {
    name: "k8s/gateway-config.yaml (the demo catalogue's copy) and no consent",
    env: { GATEWAY_DEMO_CATALOGUE: '' },
    names: 'gateway-config.yaml has simulated providers (sim-primary, sim-backup)',
  },
];

/** Runs one process to its exit: a process that started instead of refusing is stopped after 90 s, and fails. */
async function outcome(name: string, env: Record<string, string>, names: string) {
  const p = runEntry(`services/${name}/src/main.ts`, env);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 90_000);
  const code = await p.exited;
  clearTimeout(timer);
  const out = p.output();
  return { name, code, names: out.includes(names) || out.slice(-600) };
}

describe('every fleet process refuses the modes that cannot settle', () => {
  it.each(CASES.map((c) => [c.name, c] as const))(
    '%s: each of the seven exits 1 naming the variable',
    async (_name, c) => {
      const outcomes = await Promise.all(PROCESSES.map((name) => outcome(name, { ...COMPLETE, ...c.env }, c.names)));
      expect(outcomes).toEqual(PROCESSES.map((name) => ({ name, code: 1, names: true })));
    },
    150_000,
  );
});

describe('pnpm fleet consents to the demo catalogue for the processes it starts', () => {
  let fleet: Fleet | undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-fleet-demo-'));
  afterAll(async () => {
    await fleet?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves the built-in demo catalogue without GATEWAY_CONFIG, as the operator contract says', async () => {
    fleet = await onFleetPorts((port) => {
      const db = new URL(PG_URL);
      db.pathname = `/gw_test_${crypto.randomBytes(6).toString('hex')}`;
      return startFleet({ port, databaseUrl: db.toString(), dropDatabaseOnStop: true, logLevel: 'warn', dataDir: dir, logDir: dir });
    });
    const models = await fetch(`${fleet.url}/v1/models`);
    const body = (await models.json()) as { data: Array<{ id: string }> };
    expect({ status: models.status, demo: body.data.some((m) => m.id === 'demo/chat-small') }).toEqual({ status: 200, demo: true });
  }, 120_000);
});
