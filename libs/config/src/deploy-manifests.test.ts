/**
 * The Helm chart and k8s/ are checked against the service table, so a service added to one and not the others
 * fails here instead of in a cluster. Rendered with `helm template` where helm is installed; the chart's values and
 * templates, and the plain manifests, are parsed either way.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { EDGE, METRICS_PORT_OFFSET, SERVICES } from '@gateway/topology';
import { ENV_VARIABLES } from './env';

const ROOT = path.resolve(__dirname, '../../..');
const CHART = path.join(ROOT, 'deploy/helm/model-gateway');
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
  expect({ deployment: !!deployment, service: !!service }).toEqual({ deployment: true, service: true });
  const container = deployment!.spec.template.spec.containers[0];
  expect(container.command.join(' ')).toContain(`services/${e.name}/src/main.ts`);
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
  const servicePorts = Object.fromEntries(service!.spec.ports.map((p: { name: string; port: number }) => [p.name, p.port]));
  expect(servicePorts).toEqual({ http: e.port, metrics: e.metricsPort });
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

describe('the Helm chart follows the service table', () => {
  const values = YAML.parse(fs.readFileSync(path.join(CHART, 'values.yaml'), 'utf8'));

  it.each(expected.map((e) => [e.name, e] as const))('values: services.%s with its ports, command and peers', (_name, e) => {
    const v = values.services[e.name];
    expect({ enabled: v.enabled, port: v.port, metricsPort: v.metricsPort }).toEqual({ enabled: true, port: e.port, metricsPort: e.metricsPort });
    expect(v.command.join(' ')).toContain(`services/${e.name}/src/main.ts`);
    expect([...v.peers].sort()).toEqual([...e.peers].sort());
  });

  it('values: every service gets the bus, and the demo consent goes with the demo catalogue, loudly', () => {
    for (const e of expected) expect({ name: e.name, bus: values.services[e.name].bus }).toEqual({ name: e.name, bus: true });
    const simulated = values.gatewayConfig.providers.some((p: { kind: string }) => p.kind === 'simulated');
    expect({ simulated, consent: values.demoCatalogue }).toEqual({ simulated, consent: simulated });
    const text = fs.readFileSync(path.join(CHART, 'values.yaml'), 'utf8');
    expect(text).toMatch(/DEMO ONLY[^\n]*\n(#[^\n]*\n)*demoCatalogue: true/);
    const helpers = fs.readFileSync(path.join(CHART, 'templates/_helpers.tpl'), 'utf8');
    expect(helpers).toMatch(/if \$root\.Values\.demoCatalogue \}\}\n- name: GATEWAY_DEMO_CATALOGUE\n\s+value: "true"/);
    expect(helpers).toContain('services.%s.bus must be true');
  });

  it('values: no service the table does not know', () => {
    expect(Object.keys(values.services).sort()).toEqual(expected.map((e) => e.name).sort());
  });

  it('templates: probes on the metrics port, METRICS_PORT in the environment, metrics scraped there', () => {
    const deployment = fs.readFileSync(path.join(CHART, 'templates/deployment.yaml'), 'utf8');
    const helpers = fs.readFileSync(path.join(CHART, 'templates/_helpers.tpl'), 'utf8');
    const monitor = fs.readFileSync(path.join(CHART, 'templates/servicemonitor.yaml'), 'utf8');
    expect(deployment.match(/port: metrics/g)).toHaveLength(3);
    expect(deployment).toContain('containerPort: {{ int $svc.metricsPort }}');
    expect(helpers).toMatch(/- name: METRICS_PORT\n\s+value: \{\{ int \$svc\.metricsPort \| quote \}\}/);
    expect(monitor).toContain('- port: metrics');
  });

  const helm = available('helm', ['version']);
  (helm ? it : it.skip)(
    `renders with helm template into the same manifests as the table${helm ? '' : ' (skipped: helm is not installed here)'}`,
    () => {
      const out = execFileSync('helm', ['template', 'gw', CHART, '-f', path.join(CHART, 'ci/test-values.yaml')], { encoding: 'utf8' });
      const docs = docsOf(out);
      for (const e of expected) {
        expectManifests(
          docs,
          e,
          (n) => `gw-model-gateway-${n}`,
          (peer) => new RegExp(`^http://gw-model-gateway-${peer}:\\d+$`),
        );
      }
    },
  );
});
