/**
 * The Helm chart, rendered and linted by Helm's own engine (helm-java, scripts/helm-engine.mjs) in every case a
 * platform team meets: the defaults (refused, naming the secret), the CI values, every option on, an existing
 * Secret, the my-values.yaml docs/deploy.md documents, and the traps of issue 34. Each rendered object is checked
 * against the Kubernetes schemas, each container's environment against the services' own env schema
 * (readFleetEnv), and the config each pod mounts through loadFleetConfig: what the pods would refuse at start is
 * refused here. Under CI=true a missing java or mvn fails these tests; elsewhere they are skipped, saying why.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { EDGE, METRICS_PORT_OFFSET, SERVICES, type ServiceName } from '@gateway/topology';
import { ENV_VARIABLES, readFleetEnv, serviceUrl } from './env';
import { loadFleetConfig } from './fleet-config';
import { type HelmCase, type HelmResult, helmEngineMissing, renderCases } from './deploy/helm-engine';
import { schemaProblems } from './deploy/kube-schema';
import { containerEnvironments, storesOf, type ContainerEnv, type KubeObject, type Store } from './deploy/pod-env';

const ROOT = path.resolve(__dirname, '../../..');
const CHART = path.join(ROOT, 'deploy/helm/model-gateway');
const CI = path.join(CHART, 'ci');
const RELEASE = 'gw';
const FULLNAME = `${RELEASE}-model-gateway`;
const TABLE = [
  { name: EDGE.name, port: EDGE.port, peers: SERVICES.map((s) => s.name) as string[] },
  ...SERVICES.map((s) => ({ ...s, peers: [...s.peers] as string[] })),
];

const missing = helmEngineMissing();
const mustRun = process.env.CI === 'true';
const suite = missing && !mustRun ? describe.skip : describe;

/** Values written for one case, next to the others in a temporary directory. */
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'helm-chart-test-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));
function valuesFile(name: string, values: unknown): string {
  const file = path.join(scratch, `${name}.yaml`);
  fs.writeFileSync(file, typeof values === 'string' ? values : YAML.stringify(values));
  return file;
}

/** The my-values.yaml of docs/deploy.md: the first yaml block after its marker comment. */
function documentedValues(): string {
  const doc = fs.readFileSync(path.join(ROOT, 'docs/deploy.md'), 'utf8');
  const at = doc.indexOf('<!-- my-values.yaml -->');
  const block = /```yaml\n([\s\S]*?)```/.exec(doc.slice(at));
  if (at < 0 || !block) throw new Error('docs/deploy.md: no ```yaml block after <!-- my-values.yaml -->');
  return block[1];
}

/** The Secret keys docs/deploy.md lists in "Secret keys" (the first column of its table). */
function documentedSecretKeys(): string[] {
  const doc = fs.readFileSync(path.join(ROOT, 'docs/deploy.md'), 'utf8');
  const start = doc.indexOf('### Secret keys');
  const section = doc.slice(start, doc.indexOf('\n#', start + 1));
  return [...section.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]);
}

const secretExample = YAML.parseAllDocuments(fs.readFileSync(path.join(ROOT, 'k8s/secret.example.yaml'), 'utf8')).map((d) => d.toJS());
/** k8s/secret.example.yaml's Secrets, which docs/deploy.md says serve secrets.existingSecret too. */
const exampleSecrets: Store = Object.fromEntries(secretExample.map((s) => [s.metadata.name, s.stringData]));

const ciValues = path.join(CI, 'test-values.yaml');
const over = (name: string, values: unknown) => ({ name, values: [ciValues, valuesFile(name, values)] });

/** Every case: its values, and the Secrets that exist beside the release (its own are rendered). */
const CASES: HelmCase[] = [
  { name: 'defaults', values: [] },
  { name: 'ci', values: [ciValues], lint: true },
  { name: 'all-options', values: [path.join(CI, 'all-options-values.yaml')], lint: true },
  { name: 'existing-secret', values: [path.join(CI, 'existing-secret-values.yaml')], lint: true },
  { name: 'documented', values: [valuesFile('documented', documentedValues())], lint: true },
  // What deploy/kind/e2e.sh installs: checked here because that script cannot run on these machines.
  { name: 'kind', values: [path.join(ROOT, 'deploy/kind/values.yaml')], lint: true },
  over('short-token', { secrets: { internalToken: 'fifteen-chars-x' } }),
  over('short-accepted-token', { secrets: { internalTokenAccepted: 'too-short' } }),
  over('schema-type', { services: { edge: { replicas: 'two' } } }),
  over('schema-unknown', { secret: { adminToken: 'misspelt-block' } }),
  over('media-replicas', { services: { media: { replicas: 2 } } }),
  over('zeros', { services: { text: { replicas: 0 } }, podDisruptionBudget: { maxUnavailable: 0 }, image: { tag: 20240101 } }),
  over('float-tag', { image: { tag: 1.5 } }),
  over('mcp-disabled', { services: { mcp: { enabled: false } } }),
  over('ingress', { ingress: { enabled: true } }),
  over('new-config', { gatewayConfig: { limits: { rate_limit: { requests: 60, interval: '60s' } } } }),
  over('media-emptydir', { mediaStorage: { persistence: { enabled: false } } }),
  over('kafka-tls-ca', {
    bus: { type: 'kafka', kafka: { brokers: 'kafka-0.kafka:9093', tls: true, ca: { configMapName: 'kafka-ca', key: 'cluster-ca.pem' } } },
  }),
  over('kafka-ca-without-tls', { bus: { type: 'kafka', kafka: { brokers: 'kafka-0.kafka:9093', ca: { secretName: 'kafka-ca' } } } }),
  over('kafka-ca-both', {
    bus: { type: 'kafka', kafka: { brokers: 'kafka-0.kafka:9093', tls: true, ca: { secretName: 'kafka-ca', configMapName: 'kafka-ca' } } },
  }),
  over('kafka-topics-zero', { bus: { type: 'kafka', kafka: { brokers: 'kafka-0.kafka:9093', topics: { partitions: 0 } } } }),
  // Defect 1 as it was: a bare n that Helm's YAML 1.1 reads as false. The checks below must refuse it.
  {
    name: 'bare-n',
    values: [
      ciValues,
      valuesFile(
        'bare-n',
        'gatewayConfig:\n  models:\n    - {id: a/b, category: image, status: available, pricing: {image: "0.01"}, supported_parameters: [n], endpoints: [{provider: sim-primary, model: x}]}\n',
      ),
    ],
  },
];
const EXTERNAL: Record<string, { secrets?: Store; configMaps?: Store }> = {
  'all-options': {
    secrets: { 'pg-billing-app': { uri: 'postgres://billing:pw@pg-billing-rw:5432/app' } },
    configMaps: { 'gateway-extra-ca': { 'ca.crt': '-----BEGIN CERTIFICATE-----' } },
  },
  'existing-secret': { secrets: exampleSecrets },
  'kafka-tls-ca': { configMaps: { 'kafka-ca': { 'cluster-ca.pem': '-----BEGIN CERTIFICATE-----\nfrom the kafka-ca ConfigMap' } } },
};

let results: Record<string, HelmResult> = {};
beforeAll(() => {
  if (missing) throw new Error(`the Helm engine cannot run (CI=true needs it): ${missing}`);
  const started = Date.now();
  results = renderCases(CHART, CASES, { release: RELEASE, namespace: 'gateway', kubeVersion: '1.30.0' });
  if (process.env.HELM_CHART_TEST_TIMING) process.stderr.write(`helm engine: ${CASES.length} cases in ${Date.now() - started} ms\n`);
}, 180_000);

const parsed = new Map<string, KubeObject[]>();
const objectsOf = (name: string): KubeObject[] => {
  const r = results[name];
  if (!r?.manifest) throw new Error(`${name}: Helm refused it: ${r?.error}`);
  if (!parsed.has(name))
    parsed.set(
      name,
      YAML.parseAllDocuments(r.manifest)
        .map((d) => d.toJS())
        .filter(Boolean),
    );
  return parsed.get(name)!;
};
const find = (objects: KubeObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
const resolved = new Map<string, ContainerEnv[]>();
const environments = (name: string): ContainerEnv[] => {
  if (!resolved.has(name))
    resolved.set(
      name,
      containerEnvironments(objectsOf(name), storesOf(objectsOf(name), EXTERNAL[name]), fs.mkdtempSync(path.join(scratch, `${name}-`))),
    );
  return resolved.get(name)!;
};
const envOf = (name: string, component: string) => environments(name).find((c) => c.component === component && c.container === component)!;

/** What every pod of a rendered case would do at start, as lines; empty when every one starts. */
function startProblems(name: string): string[] {
  const problems: string[] = [];
  for (const c of environments(name).filter((e) => e.container === e.component)) {
    problems.push(...c.unresolved.map((u) => `${c.component}: ${u}`));
    // Variables Node reads itself, not the gateway's schema.
    const unknown = c.names.filter((n) => !ENV_VARIABLES.includes(n) && n !== 'NODE_EXTRA_CA_CERTS');
    if (unknown.length) problems.push(`${c.component}: sets variables no code reads: ${unknown.join(', ')}`);
    try {
      const env = readFleetEnv(c.component, c.env);
      loadFleetConfig(env, c.component);
      // What the mains require beyond the schema: each peer's address (the edge: billing, the others optional), a
      // database where replicas share state, and the edge's address for mcp's tools.
      const deployed = new Set(environments(name).map((e) => e.component));
      const peers = c.component === EDGE.name ? ['billing'] : [...(SERVICES.find((s) => s.name === c.component)?.peers ?? [])];
      for (const peer of peers) serviceUrl(env, peer as ServiceName, `the ${c.component}`);
      if (c.component === EDGE.name) for (const s of SERVICES) if (deployed.has(s.name)) serviceUrl(env, s.name, 'the edge');
      if (DATABASE_REQUIRED.includes(c.component) && !env.DATABASE_URL) problems.push(`${c.component}: DATABASE_URL is unset`);
      if (c.component === 'mcp' && !env.EDGE_URL) problems.push('mcp: EDGE_URL is unset');
    } catch (e) {
      problems.push(`${c.component}: ${(e as Error).message}`);
    }
  }
  return problems;
}
/**
 * The services whose state their replicas share: billing refuses to start without DATABASE_URL; the others would fall
 * back to a PGlite of their own per pod (on a read-only root filesystem, or each replica with its own history).
 */
const DATABASE_REQUIRED = ['billing', 'media', 'jobs', 'mcp', 'catalogue'];

const RENDERED = [
  'ci',
  'kind',
  'all-options',
  'existing-secret',
  'documented',
  'zeros',
  'float-tag',
  'mcp-disabled',
  'ingress',
  'new-config',
  'media-emptydir',
  'kafka-tls-ca',
];

suite(`the Helm chart rendered by Helm's engine${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('refuses the defaults, naming the secret to set', () => {
    expect(results.defaults.manifest).toBeUndefined();
    expect(results.defaults.error).toContain('secrets.internalToken is required');
  });

  it.each(RENDERED)('%s: renders (and the main cases lint clean with --strict)', (name) => {
    const { error, lint } = results[name];
    expect({ error, lint: lint?.failed ? lint.messages : 'ok' }).toEqual({ error: undefined, lint: 'ok' });
  });

  it('the main cases were linted', () => {
    expect(CASES.filter((c) => c.lint && !results[c.name].lint).map((c) => c.name)).toEqual([]);
  });

  it.each(RENDERED)('%s: every object passes the Kubernetes schemas, unknown fields included', async (name) => {
    const problems: string[] = [];
    for (const o of objectsOf(name)) problems.push(...(await schemaProblems(o)));
    expect(problems).toEqual([]);
  });

  it('the schema check refuses what the API server would (a check that cannot fail is a defect)', async () => {
    const pdb = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'x' }, spec: { maxUnavaliable: 1, selector: {} } };
    const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' }, spec: { ports: [{ port: '80' }] } };
    expect(await schemaProblems(pdb)).toEqual(['PodDisruptionBudget/x: /spec/maxUnavaliable is not a field of policy/v1 PodDisruptionBudget']);
    expect((await schemaProblems(service)).join()).toContain('/spec/ports/0/port');
  });

  it.each(RENDERED)('%s: every pod starts: its Secret keys exist, its environment passes readFleetEnv, its config loadFleetConfig', (name) => {
    expect(startProblems(name)).toEqual([]);
  });

  it("deploy/kind/backing-services.yaml (the kind script's PostgreSQL, Redis and Kafka) passes the Kubernetes schemas", async () => {
    const problems: string[] = [];
    for (const o of YAML.parseAllDocuments(fs.readFileSync(path.join(ROOT, 'deploy/kind/backing-services.yaml'), 'utf8')).map((d) => d.toJS()))
      problems.push(...(await schemaProblems(o)));
    expect(problems).toEqual([]);
  });

  it.each(RENDERED)('%s: each migrate Job (a pre-install hook) reads a PostgreSQL URL that exists before the release does', (name) => {
    const objects = objectsOf(name);
    const jobs = containerEnvironments(objects, storesOf(objects, EXTERNAL[name]), fs.mkdtempSync(path.join(scratch, `${name}-jobs-`)), ['Job']);
    expect(jobs.map((j) => j.deployment).sort()).toEqual(
      DATABASE_REQUIRED.filter((s) => environments(name).some((e) => e.component === s))
        .map((s) => `${name === 'all-options' ? 'gw-gateway' : FULLNAME}-migrate-${s}`)
        .sort(),
    );
    for (const job of jobs)
      expect({ job: job.deployment, unresolved: job.unresolved, url: job.env.DATABASE_URL }).toEqual({
        job: job.deployment,
        unresolved: [],
        url: expect.stringMatching(/^postgres(ql)?:\/\/.+/),
      });
    // The release's own Secret is made after pre-install hooks run: a Job must not read it.
    const own = find(objects, 'Secret', name === 'all-options' ? 'gw-gateway' : FULLNAME);
    const readsOwn = objects
      .filter((o) => o.kind === 'Job')
      .flatMap((o) => o.spec.template.spec.containers[0].env)
      .some((v: { valueFrom?: { secretKeyRef?: { name: string } } }) => own && v.valueFrom?.secretKeyRef?.name === own.metadata.name);
    expect(readsOwn).toBe(false);
  });

  it('defect 1: a bare n in supported_parameters (YAML 1.1 false) is caught by the config check', () => {
    expect(startProblems('bare-n').join('\n')).toMatch(/supported_parameters\.0: .*string/);
  });

  it("defect 1: values.yaml reads the same as YAML 1.1 (Helm's) and 1.2, so no other bare n, y, no, on or off hides", () => {
    const text = fs.readFileSync(path.join(CHART, 'values.yaml'), 'utf8');
    expect(YAML.parse(text, { version: '1.1' })).toEqual(YAML.parse(text, { version: '1.2' }));
  });

  it.each(['ci', 'all-options', 'existing-secret'])(
    '%s: one Deployment, one Service (http only) and one metrics Service per service of the table',
    (name) => {
      const objects = objectsOf(name);
      for (const e of TABLE) {
        const full = `${FULLNAME}-${e.name}`.replace('model-gateway', name === 'all-options' ? 'gateway' : 'model-gateway');
        const deployment = find(objects, 'Deployment', full);
        const ports = (svc?: KubeObject) => Object.fromEntries((svc?.spec.ports ?? []).map((p: { name: string; port: number }) => [p.name, p.port]));
        expect({ name: e.name, deployment: !!deployment }).toEqual({ name: e.name, deployment: true });
        expect(ports(find(objects, 'Service', full))).toEqual({ http: e.port });
        const metrics = find(objects, 'Service', `${full}-metrics`);
        expect(ports(metrics)).toEqual({ metrics: e.port + METRICS_PORT_OFFSET });
        expect(metrics?.metadata.labels?.['model-gateway.io/metrics']).toBe('true');
        const container = deployment!.spec.template.spec.containers[0];
        expect(container.command.join(' ')).toContain(`dist/${e.name}.cjs`);
        for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) expect(container[probe].httpGet.port).toBe('metrics');
        const env = envOf(name, e.name).env;
        for (const peer of e.peers) expect(env[SERVICES.find((s) => s.name === peer)!.urlEnv]).toMatch(/^http:\/\/gw-[a-z-]+:\d+$/);
      }
    },
  );

  it('defect 5: the my-values.yaml of docs/deploy.md renders, and every pod of it starts', () => {
    expect(results.documented.error).toBeUndefined();
    expect(startProblems('documented')).toEqual([]);
  });

  it('defect 5: with existingSecret, the keys the pods read are the ones docs/deploy.md and k8s/secret.example.yaml list', () => {
    const keysOf = (name: string, secret: string) =>
      objectsOf(name)
        .filter((o) => o.kind === 'Deployment')
        .flatMap((d) =>
          d.spec.template.spec.containers.flatMap((c: { env?: { valueFrom?: { secretKeyRef?: { name: string; key: string } } }[] }) => c.env ?? []),
        )
        .map((v) => v.valueFrom?.secretKeyRef)
        .filter((r) => r?.name === secret)
        .map((r) => r!.key);
    // Every key an option makes a pod read (all-options: S3, Kafka SASL, the second token) is documented too.
    const refs = [...keysOf('existing-secret', 'gateway-secrets'), ...keysOf('all-options', 'gw-gateway')];
    expect(refs).toEqual(expect.arrayContaining(['internal-token', 'kafka-sasl-password', 'media-s3-access-key-id']));
    const documented = documentedSecretKeys();
    expect([...new Set(refs)].filter((k) => !documented.includes(k))).toEqual([]);
    expect(Object.keys(exampleSecrets['gateway-secrets']).filter((k) => !documented.includes(k))).toEqual([]);
    expect(find(objectsOf('existing-secret'), 'Secret', FULLNAME)).toBeUndefined();
  });

  it('defect 4: TRUST_PROXY is 1 behind the chart ingress, as set when set, and absent without an ingress', () => {
    expect(envOf('ingress', 'edge').env.TRUST_PROXY).toBe('1');
    expect(envOf('all-options', 'edge').env.TRUST_PROXY).toBe('2');
    expect(envOf('ci', 'edge').env.TRUST_PROXY).toBeUndefined();
    // Only the edge has a public listener.
    expect(
      environments('all-options')
        .filter((c) => c.env.TRUST_PROXY)
        .map((c) => c.component),
    ).toEqual(['edge']);
  });

  it('defect 8: media keeps its files on a claim with Recreate by default, on the bucket with S3, and refuses two replicas on one volume', () => {
    const ci = objectsOf('ci');
    const media = find(ci, 'Deployment', `${FULLNAME}-media`)!;
    const data = media.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'data');
    expect(data.persistentVolumeClaim.claimName).toBe(`${FULLNAME}-media`);
    expect(find(ci, 'PersistentVolumeClaim', `${FULLNAME}-media`)?.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    expect(media.spec.strategy).toEqual({ type: 'Recreate' });
    const s3 = envOf('all-options', 'media').env;
    expect(s3).toMatchObject({ MEDIA_S3_BUCKET: 'gateway-media', MEDIA_S3_FORCE_PATH_STYLE: 'true', MEDIA_S3_PREFIX: 'media/' });
    expect(find(objectsOf('all-options'), 'PersistentVolumeClaim', 'gw-gateway-media')).toBeUndefined();
    const emptyDir = find(objectsOf('media-emptydir'), 'Deployment', `${FULLNAME}-media`)!;
    expect(emptyDir.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'data').emptyDir).toEqual({ sizeLimit: '2Gi' });
    expect(emptyDir.spec.strategy.type).toBe('RollingUpdate');
    expect(results['media-replicas'].error).toContain('services.media.replicas is 2');
    expect(fs.readFileSync(path.join(CHART, 'values.yaml'), 'utf8')).not.toContain('media.s3.bucket');
  });

  it('defect 9: a short internal token is refused at template time, not in every pod', () => {
    // values.schema.json refuses it first (minLength 16); the template's own check stands behind it for --skip-schema-validation.
    expect(results['short-token'].error).toMatch(/secrets\/internalToken'?: minLength: got 15, want 16/);
    expect(results['short-accepted-token'].error).toMatch(/secrets\/internalTokenAccepted'?: minLength: got 9, want 16/);
  });

  it('defect 9: disabling a service leaves it out of the edge, which starts and answers its routes 404', () => {
    const objects = objectsOf('mcp-disabled');
    expect(find(objects, 'Deployment', `${FULLNAME}-mcp`)).toBeUndefined();
    expect(envOf('mcp-disabled', 'edge').env.MCP_URL).toBeUndefined();
    expect(startProblems('mcp-disabled')).toEqual([]);
  });

  it('defect 9: the second internal token reaches every service, from the Secret', () => {
    const all = environments('all-options').filter((c) => c.container === c.component);
    expect(all.map((c) => [c.component, c.env.GATEWAY_INTERNAL_TOKEN_ACCEPTED])).toEqual(
      all.map((c) => [c.component, 'all-options-next-internal-token']),
    );
  });

  it('defect 9: the ConfigMap is named after its content and kept, so old pods keep the config they started with', () => {
    const name = (c: string) => objectsOf(c).find((o) => o.kind === 'ConfigMap')!.metadata;
    expect(name('ci').name).toMatch(new RegExp(`^${FULLNAME}-config-[0-9a-f]{10}$`));
    expect(name('new-config').name).not.toBe(name('ci').name);
    expect(name('existing-secret').name).toBe(name('ci').name.replace(/[0-9a-f]{10}$/, name('existing-secret').name.slice(-10)));
    expect(name('ci').annotations?.['helm.sh/resource-policy']).toBe('keep');
    const mounted = find(objectsOf('ci'), 'Deployment', `${FULLNAME}-edge`)!.spec.template.spec.volumes.find(
      (v: { name: string }) => v.name === 'config',
    );
    expect(mounted.configMap.name).toBe(name('ci').name);
  });

  it('defect 9: replicas 0 and maxUnavailable 0 stay 0; a numeric image.tag renders as written', () => {
    const objects = objectsOf('zeros');
    expect(find(objects, 'Deployment', `${FULLNAME}-text`)!.spec.replicas).toBe(0);
    expect(objects.filter((o) => o.kind === 'PodDisruptionBudget').map((o) => o.spec.maxUnavailable)).toEqual(TABLE.map(() => 0));
    const image = (c: string) => find(objectsOf(c), 'Deployment', `${FULLNAME}-edge`)!.spec.template.spec.containers[0].image;
    expect([image('zeros'), image('float-tag')]).toEqual(['model-gateway:20240101', 'model-gateway:1.5']);
  });

  it('defect 11: a NetworkPolicy per service blocks egress to the cloud metadata address and keeps the services private', () => {
    const policies = objectsOf('ci').filter((o) => o.kind === 'NetworkPolicy');
    expect(policies).toHaveLength(TABLE.length);
    for (const p of policies) {
      const blocks = p.spec.egress
        .flatMap((r: { to: { ipBlock?: { cidr: string; except?: string[] } }[] }) => r.to.map((t) => t.ipBlock))
        .filter(Boolean);
      expect(blocks.find((b: { cidr: string }) => b.cidr === '0.0.0.0/0').except).toContain('169.254.169.254/32');
      const http = p.spec.ingress.find((r: { ports: { port: string }[] }) => r.ports.some((x) => x.port === 'http'));
      const component = p.metadata.labels?.['app.kubernetes.io/component'];
      if (component === 'edge') expect(http.from).toBeUndefined();
      else
        expect(http.from).toEqual([
          { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'model-gateway', 'app.kubernetes.io/instance': RELEASE } } },
        ]);
    }
  });

  it('values.schema.json: a mistyped or misspelt value fails helm template, naming it', () => {
    expect(results['schema-type'].error).toContain("at '/services/edge/replicas': got string, want integer");
    expect(results['schema-unknown'].error).toContain("additional properties 'secret' not allowed");
  });

  it('Kafka: brokers, TLS, SASL (password from the Secret) and the topic prefix reach every service', () => {
    for (const c of environments('all-options').filter((e) => e.container === e.component))
      expect({ c: c.component, ...c.env }).toMatchObject({
        c: c.component,
        BUS: 'kafka',
        KAFKA_BROKERS: 'kafka-0.kafka:9093,kafka-1.kafka:9093',
        KAFKA_SSL: 'true',
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_USERNAME: 'gateway',
        KAFKA_SASL_PASSWORD: 'kafka-password',
        KAFKA_TOPIC_PREFIX: 'gw-prod.',
      });
  });

  it('Kafka TLS: the brokers’ CA from a Secret is mounted read-only in every service and named by KAFKA_SSL_CA_FILE; the topic settings reach them', () => {
    for (const c of environments('all-options').filter((e) => e.container === e.component))
      expect({ c: c.component, ...c.env }).toMatchObject({
        c: c.component,
        KAFKA_SSL: 'true',
        KAFKA_SSL_CA_FILE: '/etc/kafka-ca/ca.crt',
        KAFKA_TOPIC_PARTITIONS: '6',
        KAFKA_TOPIC_REPLICATION: '3',
      });
    const deployments = objectsOf('all-options').filter((o) => o.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata.labels?.['app.kubernetes.io/component']).sort()).toEqual(TABLE.map((s) => s.name).sort());
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      const main = pod.containers.find((c: { name: string }) => c.name === d.metadata.labels?.['app.kubernetes.io/component']);
      expect(pod.volumes).toContainEqual({
        name: 'kafka-ca',
        secret: { secretName: 'kafka-cluster-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
      });
      expect(main.volumeMounts).toContainEqual({ name: 'kafka-ca', mountPath: '/etc/kafka-ca', readOnly: true });
    }
  });

  it('Kafka TLS: a CA from a ConfigMap is the file KAFKA_SSL_CA_FILE names, in every pod; without the option no pod gets either', () => {
    for (const c of environments('kafka-tls-ca').filter((e) => e.container === e.component)) {
      expect(c.env.KAFKA_SSL_CA_FILE).not.toBe('/etc/kafka-ca/cluster-ca.pem');
      // The pod's copy of the mounted ConfigMap key (containerEnvironments points the variable at it).
      expect({ c: c.component, ca: fs.readFileSync(c.env.KAFKA_SSL_CA_FILE, 'utf8') }).toEqual({
        c: c.component,
        ca: '-----BEGIN CERTIFICATE-----\nfrom the kafka-ca ConfigMap',
      });
      expect(c.names).not.toContain('KAFKA_TOPIC_PARTITIONS');
    }
    for (const o of objectsOf('ci').filter((x) => x.kind === 'Deployment')) {
      expect(o.spec.template.spec.volumes.map((v: { name: string }) => v.name)).not.toContain('kafka-ca');
      expect(o.spec.template.spec.containers[0].env.map((v: { name: string }) => v.name)).not.toContain('KAFKA_SSL_CA_FILE');
    }
  });

  it('Kafka TLS: a CA without tls, or from both a Secret and a ConfigMap, or zero partitions, is refused, naming the field', () => {
    expect(results['kafka-ca-without-tls'].error).toContain('bus.kafka.ca needs bus.kafka.tls: true');
    expect(results['kafka-ca-both'].error).toContain('bus.kafka.ca: set secretName or configMapName, not both');
    expect(results['kafka-topics-zero'].error).toContain("at '/bus/kafka/topics/partitions'");
  });

  it('all-options: every option shows in the objects it belongs to', () => {
    const objects = objectsOf('all-options');
    // Hooks included (renderCases renders them inline): the migrate Jobs and their Secret, the helm test Pod.
    const kinds = [...new Set(objects.map((o) => o.kind))].sort();
    expect(kinds).toEqual(
      [
        'ConfigMap',
        'Deployment',
        'HorizontalPodAutoscaler',
        'Ingress',
        'Job',
        'NetworkPolicy',
        'Pod',
        'PodDisruptionBudget',
        'Secret',
        'Service',
        'ServiceAccount',
        'ServiceMonitor',
      ].sort(),
    );
    const deployment = (name: string) => find(objects, 'Deployment', `gw-gateway-${name}`)!;
    const pod = deployment('media').spec.template.spec;
    expect(pod.containers.map((c: { name: string }) => c.name)).toEqual(['media', 'log-shipper', 'media-sidecar']);
    expect(pod.initContainers.map((c: { name: string }) => c.name)).toEqual(['wait-for-network']);
    expect(deployment('media').spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } });
    expect(deployment('billing').spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    expect(deployment('edge').spec.replicas).toBeUndefined();
    expect(deployment('text').spec.template.spec.terminationGracePeriodSeconds).toBe(120);
    const billingDb = deployment('billing').spec.template.spec.containers[0].env.find((v: { name: string }) => v.name === 'DATABASE_URL');
    expect(billingDb.valueFrom.secretKeyRef).toEqual({ name: 'pg-billing-app', key: 'uri', optional: false });
    const pdbs = objects.filter((o) => o.kind === 'PodDisruptionBudget');
    expect(pdbs.find((p) => p.metadata.name === 'gw-gateway-jobs')!.spec).toMatchObject({ maxUnavailable: 0 });
    expect(pdbs.find((p) => p.metadata.name === 'gw-gateway-edge')!.spec).toMatchObject({ minAvailable: 1 });
    const edgePolicy = find(objects, 'NetworkPolicy', 'gw-gateway-edge')!;
    expect(edgePolicy.spec.ingress[0].from).toContainEqual({
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } },
    });
    expect(edgePolicy.spec.egress[1].to[0].ipBlock.except).toEqual(['169.254.169.254/32', '10.0.0.0/8']);
  });

  it('the ServiceMonitor scrapes the metrics Services only, with the relabelings given', () => {
    const monitor = objectsOf('all-options').find((o) => o.kind === 'ServiceMonitor')!;
    expect(monitor.spec.selector.matchLabels['model-gateway.io/metrics']).toBe('true');
    expect(monitor.spec.endpoints[0]).toMatchObject({
      port: 'metrics',
      relabelings: [{ targetLabel: 'node' }],
      metricRelabelings: [{ action: 'drop' }],
    });
  });

  it('the Grafana dashboard charts every gateway_ metric the code registers, and only metrics that exist', () => {
    const board = objectsOf('all-options').find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboard'))!;
    const json = JSON.parse(board.data!['model-gateway.json']);
    const exprs: string = json.panels.flatMap((p: { targets: { expr: string }[] }) => p.targets.map((t) => t.expr)).join('\n');
    const charted = new Set([...exprs.matchAll(/\b(gateway_[a-z_]+?|process_[a-z_]+|nodejs_[a-z0-9_]+)(_bucket|_count|_sum)?\{/g)].map((m) => m[1]));
    const source = registeredMetricNames();
    expect([...source].filter((m) => !charted.has(m)).sort()).toEqual([]);
    expect([...charted].filter((m) => m.startsWith('gateway_') && !source.has(m)).sort()).toEqual([]);
  });
});

/** Every gateway_ metric name registered in the sources (prom-client counters, histograms and gauges). */
function registeredMetricNames(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && e.name !== 'node_modules') walk(p);
      else if (/\.ts$/.test(e.name) && !/\.(test|itest|e2e)\.ts$/.test(e.name))
        // Names are registered in place or from tables (libs/spend/src/counters.ts): every quoted gateway_ name with a
        // metric's suffix counts.
        for (const m of fs.readFileSync(p, 'utf8').matchAll(/'(gateway_[a-z_]+_(?:total|seconds|open|healthy))'/g)) names.add(m[1]);
    }
  };
  for (const top of ['libs', 'services']) walk(path.join(ROOT, top));
  return names;
}
