/**
 * k8s/ says it matches the Helm chart's defaults; this holds it to that, object by object, against the chart as
 * Helm's engine renders it with the Secret k8s/ uses (gateway-secrets): the same command, ports, probes, resources,
 * replicas, strategy, volumes, security settings, PDBs, NetworkPolicies and Services, and the same variables (those
 * the chart sets only when an option is on are wired in k8s/ as optional references, for gateway.env and the
 * Secret to fill in). Then every k8s/ pod is started on paper like the chart's: its Secret keys from
 * secret.example.yaml, its environment through readFleetEnv, its config through loadFleetConfig.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { EDGE, SERVICES } from '@gateway/topology';
import { readFleetEnv } from './env';
import { loadFleetConfig } from './fleet-config';
import { type HelmResult, helmEngineMissing, renderCases } from './deploy/helm-engine';
import { schemaProblems } from './deploy/kube-schema';
import { containerEnvironments, type KubeObject, storesOf } from './deploy/pod-env';

const ROOT = path.resolve(__dirname, '../../..');
const CHART = path.join(ROOT, 'deploy/helm/model-gateway');
const K8S = path.join(ROOT, 'k8s');
const NAMES = [EDGE.name, ...SERVICES.map((s) => s.name)];

const missing = helmEngineMissing();
const suite = missing && process.env.CI !== 'true' ? describe.skip : describe;

const parse = (text: string): KubeObject[] =>
  YAML.parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter(Boolean);
const k8sFiles = YAML.parse(fs.readFileSync(path.join(K8S, 'kustomization.yaml'), 'utf8')).resources as string[];
const k8s = k8sFiles.flatMap((f) => parse(fs.readFileSync(path.join(K8S, f), 'utf8')));
const exampleSecrets = Object.fromEntries(
  parse(fs.readFileSync(path.join(K8S, 'secret.example.yaml'), 'utf8')).map((s) => [s.metadata.name, s.stringData ?? {}]),
);

/** gateway.env as kustomize's configMapGenerator reads it: KEY=everything after the first "=", comments skipped. */
const gatewayEnvText = fs.readFileSync(path.join(K8S, 'gateway.env'), 'utf8');
const gatewayEnv = Object.fromEntries(
  gatewayEnvText
    .split('\n')
    .filter((l) => /^[A-Z_][A-Z0-9_]*=/.test(l))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
);

let chart: Record<string, KubeObject[]> = {};
beforeAll(() => {
  if (missing) throw new Error(`the Helm engine cannot run (CI=true needs it): ${missing}`);
  const values = (name: string) => path.join(CHART, 'ci', name);
  const rendered: Record<string, HelmResult> = renderCases(
    CHART,
    [
      { name: 'existing-secret', values: [values('existing-secret-values.yaml')] },
      { name: 'all-options', values: [values('all-options-values.yaml')] },
    ],
    { release: 'model-gateway', namespace: 'model-gateway', kubeVersion: '1.30.0' },
  );
  chart = Object.fromEntries(Object.entries(rendered).map(([k, r]) => [k, parse(r.manifest ?? '')]));
}, 180_000);

const component = (o: KubeObject) => o.metadata.labels?.['app.kubernetes.io/component'];
const byComponent = (objects: KubeObject[], kind: string, name: string) =>
  objects.filter((o) => o.kind === kind && component(o) === name && !o.metadata.labels?.['model-gateway.io/metrics']);

/** What must agree between a chart Deployment and its k8s/ twin; names of ConfigMaps and Secrets aside. */
function shape(d: KubeObject) {
  const pod = d.spec.template.spec;
  const c = pod.containers[0];
  const volumes = Object.fromEntries(
    (pod.volumes ?? []).map((v: Record<string, unknown>) => {
      const { name, configMap, persistentVolumeClaim, ...rest } = v as {
        name: string;
        configMap?: { items?: unknown };
        persistentVolumeClaim?: unknown;
      };
      return [name, configMap ? { configMap: configMap.items } : persistentVolumeClaim ? { persistentVolumeClaim: true } : rest];
    }),
  );
  return {
    replicas: d.spec.replicas,
    strategy: d.spec.strategy,
    revisionHistoryLimit: d.spec.revisionHistoryLimit,
    pod: {
      automountServiceAccountToken: pod.automountServiceAccountToken,
      enableServiceLinks: pod.enableServiceLinks,
      securityContext: pod.securityContext,
      terminationGracePeriodSeconds: pod.terminationGracePeriodSeconds,
    },
    container: {
      command: c.command,
      args: c.args,
      ports: c.ports,
      resources: c.resources,
      startupProbe: c.startupProbe,
      livenessProbe: c.livenessProbe,
      readinessProbe: c.readinessProbe,
      lifecycle: c.lifecycle,
      securityContext: c.securityContext,
      imagePullPolicy: c.imagePullPolicy,
      volumeMounts: Object.fromEntries(
        c.volumeMounts.map((m: { name: string; mountPath: string; readOnly?: boolean }) => [m.name, [m.mountPath, !!m.readOnly]]),
      ),
    },
    volumes,
  };
}

const envNames = (d: KubeObject) => d.spec.template.spec.containers[0].env.map((v: { name: string }) => v.name) as string[];
/** Variables the all-options values add through extraEnv, not through an option k8s/ wires. */
const EXTRA_ENV = ['NODE_EXTRA_CA_CERTS', 'HTTP_MAX_CONNECTIONS_PER_ADDRESS'];

suite(`k8s/ matches the chart's defaults${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it.each(NAMES)('%s: the Deployment has the same command, ports, probes, resources, replicas, strategy, volumes and security', (name) => {
    const [fromChart] = byComponent(chart['existing-secret'], 'Deployment', name);
    const [fromK8s] = byComponent(k8s, 'Deployment', name);
    expect(shape(fromK8s)).toEqual(shape(fromChart));
  });

  it.each(NAMES)('%s: the same variables; those the chart sets only with an option on are optional references in k8s/', (name) => {
    const [fromChart] = byComponent(chart['existing-secret'], 'Deployment', name);
    const [allOn] = byComponent(chart['all-options'], 'Deployment', name);
    const [fromK8s] = byComponent(k8s, 'Deployment', name);
    const always = envNames(fromChart);
    const optional = envNames(allOn).filter((n) => !always.includes(n) && !EXTRA_ENV.includes(n));
    expect([...envNames(fromK8s)].sort()).toEqual([...new Set([...always, ...optional])].sort());
    const k8sEnv = fromK8s.spec.template.spec.containers[0].env as {
      name: string;
      value?: string;
      valueFrom?: Record<string, { optional?: boolean }>;
    }[];
    const notOptional = k8sEnv
      .filter((v) => optional.includes(v.name) && !Object.values(v.valueFrom ?? {}).some((r) => r.optional))
      .map((v) => v.name);
    expect(notOptional).toEqual([]);
  });

  it.each(NAMES)('%s: the same Service (http), metrics Service, PodDisruptionBudget and NetworkPolicy', (name) => {
    const chartObjects = chart['existing-secret'];
    // The chart's selectors name the release; k8s/ is the release "model-gateway" too.
    const spec = (objects: KubeObject[], kind: string, pick = (o: KubeObject) => !o.metadata.labels?.['model-gateway.io/metrics']) =>
      objects.filter((o) => o.kind === kind && component(o) === name && pick(o)).map((o) => o.spec);
    for (const kind of ['Service', 'PodDisruptionBudget', 'NetworkPolicy'])
      expect({ kind, spec: spec(k8s, kind) }).toEqual({ kind, spec: spec(chartObjects, kind) });
    const metrics = (o: KubeObject) => o.metadata.labels?.['model-gateway.io/metrics'] === 'true';
    expect(spec(k8s, 'Service', metrics)).toEqual(spec(chartObjects, 'Service', metrics));
  });

  it('the media claim asks what the chart asks', () => {
    const claim = (objects: KubeObject[]) => objects.find((o) => o.kind === 'PersistentVolumeClaim')?.spec;
    expect(claim(k8s)).toEqual(claim(chart['existing-secret']));
  });

  it('every k8s/ object passes the Kubernetes schemas', async () => {
    const problems: string[] = [];
    for (const o of k8s) problems.push(...(await schemaProblems(o)));
    expect(problems).toEqual([]);
  });

  it('every k8s/ pod starts: Secret keys from secret.example.yaml, its environment through readFleetEnv, its config through loadFleetConfig', () => {
    const configMaps = {
      'gateway-env': gatewayEnv,
      'gateway-config': { 'config.yaml': fs.readFileSync(path.join(K8S, 'gateway-config.yaml'), 'utf8') },
    };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'k8s-env-'));
    try {
      const problems = containerEnvironments(k8s, storesOf([], { secrets: exampleSecrets, configMaps }), dir).flatMap((c) => {
        try {
          loadFleetConfig(readFleetEnv(c.component, c.env), c.component);
          return c.unresolved.map((u) => `${c.component}: ${u}`);
        } catch (e) {
          return [`${c.component}: ${(e as Error).message}`];
        }
      });
      expect(problems).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('defect 9: no value in gateway.env, set or commented out, carries a trailing comment (kustomize would keep it in the value)', () => {
    const trailing = gatewayEnvText.split('\n').filter((l) => /^#?\s*[A-Z_][A-Z0-9_]*=\S*\s+#/.test(l));
    expect(trailing).toEqual([]);
  });
});
