import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Fleet, startFleet } from 'model-gateway/local-fleet';
import { onFleetPorts, PG_URL } from './support/harness';
import { COMPLETE_FLEET_ENV, everyMainRefused, fleetMainsWith } from './support/fleet-mains';

/**
 * The modes a fleet cannot settle in, refused by every command the containers run (issue 32). A fleet process on
 * the in-memory bus, or on none (which used to mean the in-memory one), publishes its settles where billing, in
 * another process, never reads them: every hold expired uncharged. A process without GATEWAY_CONFIG served the
 * built-in simulated demo catalogue, and billed real accounts for its made-up answers; so did one given the copy
 * of it that k8s/gateway-config.yaml ships. Each now exits 1 naming the variable, unless the operator consents to
 * the demo (GATEWAY_DEMO_CATALOGUE=true), which `pnpm fleet` gives the processes it starts.
 */
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

describe('every fleet process refuses the modes that cannot settle', () => {
  it.each(CASES.map((c) => [c.name, c] as const))(
    '%s: each of the seven exits 1 naming the variable',
    async (_name, c) => {
      expect(await fleetMainsWith({ ...COMPLETE_FLEET_ENV, ...c.env }, c.names, 90_000)).toEqual(everyMainRefused());
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
