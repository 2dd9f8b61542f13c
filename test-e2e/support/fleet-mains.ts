import crypto from 'node:crypto';
import path from 'node:path';
import { EDGE, SERVICES } from '@gateway/topology';
import { REPO_ROOT as ROOT, runEntry } from '@gateway/testing';

/** Every command a fleet container runs: the edge and each service of the service table. */
export const FLEET_PROCESSES = [EDGE.name, ...SERVICES.map((s) => s.name)];

/** A port nothing listens on: the peers and stores a process is given are never reached before it refuses to start. */
const NOWHERE = 'http://127.0.0.1:9';

/** Everything a fleet process needs, with a real catalogue: a refusal test takes one thing away or changes it. */
export const COMPLETE_FLEET_ENV: Record<string, string> = {
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

/**
 * Runs every fleet main with `env` to its exit, in parallel: its exit code, and whether its output holds `names`
 * (else the output's tail, so a failure shows why). A process that started instead of refusing is killed after
 * `killAfterMs`, and fails.
 */
export function fleetMainsWith(env: Record<string, string>, names: string, killAfterMs: number) {
  return Promise.all(
    FLEET_PROCESSES.map(async (name) => {
      const p = runEntry(`services/${name}/src/main.ts`, env);
      const timer = setTimeout(() => p.child.kill('SIGKILL'), killAfterMs);
      const code = await p.exited;
      clearTimeout(timer);
      const out = p.output();
      return { name, code, names: out.includes(names) || out.slice(-600) };
    }),
  );
}

/** What fleetMainsWith answers when every main refused, naming the variable. */
export const everyMainRefused = () => FLEET_PROCESSES.map((name) => ({ name, code: 1, names: true }));
