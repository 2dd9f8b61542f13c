import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { DEFAULT_CONFIG } from './default-config';
import { readEnv, readFleetEnv } from './env';
import { loadFleetConfig } from './fleet-config';

/** A fleet process's environment that starts: every test below takes one thing away or changes it. */
const FLEET = {
  GATEWAY_INTERNAL_TOKEN: 'x'.repeat(32),
  BUS: 'redis',
  REDIS_URL: 'redis://127.0.0.1:6379',
  GATEWAY_CONFIG: '/etc/gateway/config.yaml',
};
const refusal = (source: NodeJS.ProcessEnv): string => {
  try {
    readFleetEnv('text service', source);
  } catch (e) {
    return (e as Error).message;
  }
  return 'started';
};

describe('readFleetEnv refuses a fleet process that cannot settle', () => {
  it('starts with the token, a bus that crosses processes and a config', () => {
    expect(readFleetEnv('text service', FLEET).BUS).toBe('redis');
    expect(readFleetEnv('text service', { ...FLEET, BUS: 'kafka', REDIS_URL: '', KAFKA_BROKERS: 'k1:9092' }).BUS).toBe('kafka');
  });

  it('refuses BUS=memory: a settle published in text would never reach billing', () => {
    expect(refusal({ ...FLEET, BUS: 'memory' })).toBe(
      'Invalid environment:\n  BUS: "memory" cannot carry events between processes; the text service in the fleet needs redis or kafka',
    );
  });

  it('refuses a missing bus configuration, naming the variable', () => {
    expect(refusal({ ...FLEET, BUS: undefined })).toMatch(
      /^Invalid environment:\n {2}BUS: required for the text service in the fleet: redis or kafka/,
    );
    expect(refusal({ ...FLEET, BUS: '' })).toMatch(/\n {2}BUS: required/);
    expect(refusal({ ...FLEET, REDIS_URL: '' })).toBe('Invalid environment:\n  REDIS_URL: required with BUS=redis for the text service in the fleet');
    expect(refusal({ ...FLEET, BUS: 'kafka' })).toBe(
      'Invalid environment:\n  KAFKA_BROKERS: required with BUS=kafka for the text service in the fleet',
    );
  });

  it('refuses an unset GATEWAY_CONFIG (the built-in simulated demo catalogue) unless GATEWAY_DEMO_CATALOGUE=true', () => {
    expect(refusal({ ...FLEET, GATEWAY_CONFIG: undefined })).toMatch(
      /^Invalid environment:\n {2}GATEWAY_CONFIG: required for the text service in the fleet; unset, it would bill accounts for the built-in simulated demo catalogue \(set GATEWAY_DEMO_CATALOGUE=true/,
    );
    expect(refusal({ ...FLEET, GATEWAY_CONFIG: '', GATEWAY_DEMO_CATALOGUE: 'false' })).toMatch(/\n {2}GATEWAY_CONFIG: required/);
    expect(readFleetEnv('text service', { ...FLEET, GATEWAY_CONFIG: undefined, GATEWAY_DEMO_CATALOGUE: 'true' }).GATEWAY_CONFIG).toBeUndefined();
    expect(refusal({ ...FLEET, GATEWAY_DEMO_CATALOGUE: 'yes' })).toMatch(/GATEWAY_DEMO_CATALOGUE/);
  });

  it('names every problem at once, one line each', () => {
    expect(
      refusal({ BUS: 'memory' })
        .split('\n')
        .map((l) => l.trim().split(':')[0]),
    ).toEqual(['Invalid environment', 'GATEWAY_INTERNAL_TOKEN', 'BUS', 'GATEWAY_CONFIG']);
  });

  it('leaves the embedded gateway alone: one process, the in-memory bus and the demo catalogue are its contract', () => {
    const env = readEnv({});
    expect({ bus: env.BUS, config: env.GATEWAY_CONFIG }).toEqual({ bus: undefined, config: undefined });
  });
});

describe('loadFleetConfig refuses simulated providers without the consent', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fleet-config-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  /** The demo catalogue as a file, as k8s/gateway-config.yaml ships it. */
  const demoFile = path.join(dir, 'demo.yaml');
  fs.writeFileSync(demoFile, YAML.stringify(DEFAULT_CONFIG));
  const realFile = path.join(dir, 'real.yaml');
  const real = structuredClone(DEFAULT_CONFIG) as { providers: Array<{ id: string; kind: string; base_url?: string }> };
  for (const p of real.providers) Object.assign(p, { kind: 'openai', base_url: 'https://api.example.com/v1' });
  fs.writeFileSync(realFile, YAML.stringify(real));

  it('refuses a config file with a simulated provider, naming GATEWAY_CONFIG, the providers and the opt-in', () => {
    const env = readFleetEnv('text service', { ...FLEET, GATEWAY_CONFIG: demoFile });
    expect(() => loadFleetConfig(env, 'text service')).toThrow(
      /^Invalid environment:\n {2}GATEWAY_CONFIG: .*demo\.yaml has simulated providers \(sim-primary, sim-backup\).*GATEWAY_DEMO_CATALOGUE=true/,
    );
  });

  it('loads it with GATEWAY_DEMO_CATALOGUE=true, and the built-in demo catalogue with no GATEWAY_CONFIG', () => {
    const file = readFleetEnv('text service', { ...FLEET, GATEWAY_CONFIG: demoFile, GATEWAY_DEMO_CATALOGUE: 'true' });
    expect(loadFleetConfig(file, 'text service').providers.map((p) => p.kind)).toContain('simulated');
    const builtIn = readFleetEnv('text service', { ...FLEET, GATEWAY_CONFIG: '', GATEWAY_DEMO_CATALOGUE: 'true' });
    expect(loadFleetConfig(builtIn, 'text service').models.length).toBeGreaterThan(0);
  });

  it('loads a config of real upstreams without the consent', () => {
    const env = readFleetEnv('text service', { ...FLEET, GATEWAY_CONFIG: realFile });
    expect(loadFleetConfig(env, 'text service').providers.every((p) => p.kind === 'openai')).toBe(true);
  });
});
