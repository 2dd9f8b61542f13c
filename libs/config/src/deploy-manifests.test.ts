/**
 * k8s/ is checked against the service table, so a service added to one and not the other fails here instead of in
 * a cluster. The Helm chart is rendered by Helm's own engine in helm-chart.test.ts, and k8s/ is held to it in
 * k8s-matches-chart.test.ts.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { EDGE, METRICS_PORT_OFFSET, SERVICES } from '@gateway/topology';
import { ENV_VARIABLES } from './env';

const ROOT = path.resolve(__dirname, '../../..');
const K8S = path.join(ROOT, 'k8s');

interface Expected {
  name: string;
  port: number;
  metricsPort: number;
  /** Peers whose URL variable the process must get. */
  peers: string[];
}

const expected: Expected[] = [
  { name: EDGE.name, port: EDGE.port, metricsPort: EDGE.port + METRICS_PORT_OFFSET, peers: SERVICES.map((s) => s.name) },
  ...SERVICES.map((s) => ({ name: s.name, port: s.port, metricsPort: s.port + METRICS_PORT_OFFSET, peers: [...s.peers] as string[] })),
];
const urlEnvOf = (name: string) => SERVICES.find((s) => s.name === name)!.urlEnv;

function available(tool: string, args: string[]): boolean {
  try {
    execFileSync(tool, args, { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

type Doc = { kind: string; metadata: { name: string }; spec: any };
const docsOf = (text: string): Doc[] =>
  YAML.parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter(Boolean);

/** What a Deployment and its Service must say for one entry of the table, whichever tool produced them. */
function expectManifests(docs: Doc[], e: Expected, named: (name: string) => string, peerUrl: (peer: string) => RegExp): void {
  const deployment = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === named(e.name));
  const service = docs.find((d) => d.kind === 'Service' && d.metadata.name === named(e.name));
  const metricsService = docs.find((d) => d.kind === 'Service' && d.metadata.name === named(`${e.name}-metrics`));
  expect({ deployment: !!deployment, service: !!service }).toEqual({ deployment: true, service: true });
  const container = deployment!.spec.template.spec.containers[0];
  expect(container.command.join(' ')).toContain(`dist/${e.name}.cjs`);
  const ports = Object.fromEntries(container.ports.map((p: { name: string; containerPort: number }) => [p.name, p.containerPort]));
  expect(ports).toEqual({ http: e.port, metrics: e.metricsPort });
  const env = Object.fromEntries(container.env.map((v: { name: string; value?: string }) => [v.name, v.value]));
  expect({ PORT: env.PORT, METRICS_PORT: env.METRICS_PORT }).toEqual({ PORT: String(e.port), METRICS_PORT: String(e.metricsPort) });
  for (const peer of e.peers) expect(env[urlEnvOf(peer)]).toMatch(peerUrl(peer));
  // A fleet process refuses to start without the internal token, and binds loopback unless HOST says otherwise.
  const token = container.env.find((v: { name: string }) => v.name === 'GATEWAY_INTERNAL_TOKEN');
  expect(token?.valueFrom?.secretKeyRef).toEqual(expect.objectContaining({ key: 'internal-token' }));
  expect(token.valueFrom.secretKeyRef.optional).not.toBe(true);
  expect(env.HOST).toBe('0.0.0.0');
  // Every fleet process refuses to start without a bus that crosses processes, or without its config (issue 32).
  const bus = container.env.find((v: { name: string }) => v.name === 'BUS');
  expect(bus?.value ?? bus?.valueFrom?.configMapKeyRef?.key).toMatch(/^(redis|kafka|BUS)$/);
  expect(env.GATEWAY_CONFIG).toBe('/etc/gateway/config.yaml');
  for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) expect(container[probe].httpGet.port).toBe('metrics');
  // Every variable a manifest sets is one the code reads (provider keys come from envFrom, not env).
  for (const name of Object.keys(env)) expect(ENV_VARIABLES).toContain(name);
  // /metrics has a Service of its own: the one peers and the ingress use never exposes it.
  const portsOf = (s: Doc | undefined) => Object.fromEntries((s?.spec.ports ?? []).map((p: { name: string; port: number }) => [p.name, p.port]));
  expect([portsOf(service), portsOf(metricsService)]).toEqual([{ http: e.port }, { metrics: e.metricsPort }]);
}

describe('k8s/ manifests follow the service table', () => {
  const kustomization = YAML.parse(fs.readFileSync(path.join(K8S, 'kustomization.yaml'), 'utf8'));

  it.each(expected.map((e) => [e.name, e] as const))('%s: Deployment and Service with its ports, peers and probes', (_name, e) => {
    expect(kustomization.resources).toContain(`${e.name}.yaml`);
    const docs = docsOf(fs.readFileSync(path.join(K8S, `${e.name}.yaml`), 'utf8'));
    const port = (peer: string) => SERVICES.find((s) => s.name === peer)!.port;
    expectManifests(
      docs,
      e,
      (n) => n,
      (peer) => new RegExp(`^http://${peer}:${port(peer)}$`),
    );
  });

  const kubectl = available('kubectl', ['version', '--client']);
  (kubectl ? it : it.skip)(
    `renders with kubectl kustomize into the same manifests${kubectl ? '' : ' (skipped: kubectl is not installed here)'}`,
    () => {
      const docs = docsOf(execFileSync('kubectl', ['kustomize', K8S], { encoding: 'utf8' }));
      const port = (peer: string) => SERVICES.find((s) => s.name === peer)?.port;
      for (const e of expected)
        expectManifests(
          docs,
          e,
          (n) => n,
          (peer) => new RegExp(`^http://${peer}:${port(peer)}$`),
        );
    },
  );

  it('sets BUS for the fleet, and consents to simulated upstreams exactly when the example config has them, loudly', () => {
    const gatewayEnv = fs.readFileSync(path.join(K8S, 'gateway.env'), 'utf8');
    const settings = Object.fromEntries([...gatewayEnv.matchAll(/^([A-Z_]+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
    expect(settings.BUS).toMatch(/^(redis|kafka)$/);
    const config = YAML.parse(fs.readFileSync(path.join(K8S, 'gateway-config.yaml'), 'utf8'));
    const simulated = config.providers.some((p: { kind: string }) => p.kind === 'simulated');
    expect({ simulated, consent: settings.GATEWAY_DEMO_CATALOGUE === 'true' }).toEqual({ simulated, consent: simulated });
    if (simulated) expect(gatewayEnv).toMatch(/DEMO ONLY[^\n]*\n(#[^\n]*\n)*GATEWAY_DEMO_CATALOGUE=true/);
    for (const e of expected) {
      const docs = docsOf(fs.readFileSync(path.join(K8S, `${e.name}.yaml`), 'utf8'));
      const container = docs.find((d) => d.kind === 'Deployment')!.spec.template.spec.containers[0];
      const consent = container.env.find((v: { name: string }) => v.name === 'GATEWAY_DEMO_CATALOGUE');
      expect({ name: e.name, from: consent?.valueFrom?.configMapKeyRef }).toEqual({
        name: e.name,
        from: { name: 'gateway-env', key: 'GATEWAY_DEMO_CATALOGUE', optional: true },
      });
    }
  });

  it('has a PodDisruptionBudget for each service of the table', () => {
    const pdbs = docsOf(fs.readFileSync(path.join(K8S, 'pdb.yaml'), 'utf8')).filter((d) => d.kind === 'PodDisruptionBudget');
    expect(pdbs.map((d) => d.metadata.name).sort()).toEqual(expected.map((e) => e.name).sort());
  });

  it('has no Deployment for a service the table does not know', () => {
    const names = fs
      .readdirSync(K8S)
      .filter((f) => f.endsWith('.yaml'))
      .flatMap((f) => docsOf(fs.readFileSync(path.join(K8S, f), 'utf8')))
      .filter((d) => d.kind === 'Deployment')
      .map((d) => d.metadata.name)
      .sort();
    expect(names).toEqual(expected.map((e) => e.name).sort());
  });
});

describe('the deploy docs follow the service table', () => {
  const doc = (name: string) => fs.readFileSync(path.join(ROOT, 'docs', name), 'utf8');

  it('deploy.md, "What runs": one row per Deployment, with its port and metrics port', () => {
    const deploy = doc('deploy.md');
    const section = deploy.slice(deploy.indexOf('## What runs'), deploy.indexOf('\n## ', deploy.indexOf('## What runs') + 1));
    const rows = [...section.matchAll(/^\| ([a-z-]+) \| (\d+) \| (\d+) \|/gm)].map((m) => ({
      name: m[1],
      port: Number(m[2]),
      metricsPort: Number(m[3]),
    }));
    expect(rows.sort((a, b) => a.port - b.port)).toEqual(
      expected.map((e) => ({ name: e.name, port: e.port, metricsPort: e.metricsPort })).sort((a, b) => a.port - b.port),
    );
    const words = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];
    expect(section).toContain(`the fleet is ${words[expected.length] ?? expected.length} Deployments`);
  });

  it('operations.md: the variables every fleet service reads name every service in "Read by"', () => {
    const ops = doc('operations.md');
    for (const variable of ['REDIS_URL', 'KAFKA_BROKERS', 'GATEWAY_BUS_PREFIX']) {
      const row = new RegExp(`^\\| \`${variable}\` \\|[^|]*\\|([^|]*)\\|`, 'm').exec(ops)?.[1] ?? '';
      expect({ variable, missing: SERVICES.map((s) => s.name).filter((n) => !row.includes(n)) }).toEqual({ variable, missing: [] });
    }
    const databases = /^\| `DATABASE_URL` \|[^|]*\|([^|]*)\|/m.exec(ops)?.[1] ?? '';
    expect(SERVICES.map((s) => s.name).filter((n) => !databases.includes(n))).toEqual([]);
  });
});
