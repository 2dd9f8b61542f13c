/**
 * Checks rendered objects against the Kubernetes API schemas: the validators the kubernetes-models packages
 * generate from the official OpenAPI documents (Kubernetes 1.34; prometheus-operator's CRDs for ServiceMonitor),
 * plus what those validators let pass and the API server refuses or silently drops: fields the schema does not know.
 */

import path from 'node:path';

/** The packages export these files for import only; they are root devDependencies of the workspace. */
const MODULES = path.resolve(__dirname, '../../../../node_modules');

type Validate = ((data: unknown) => boolean) & { errors?: { instancePath: string; message?: string; keyword: string; params: unknown }[] | null };

const SCHEMAS: Record<string, string> = {
  'v1/ConfigMap': 'kubernetes-models/_schemas/IoK8sApiCoreV1ConfigMap.js',
  'v1/Secret': 'kubernetes-models/_schemas/IoK8sApiCoreV1Secret.js',
  'v1/Service': 'kubernetes-models/_schemas/IoK8sApiCoreV1Service.js',
  'v1/ServiceAccount': 'kubernetes-models/_schemas/IoK8sApiCoreV1ServiceAccount.js',
  'v1/Pod': 'kubernetes-models/_schemas/IoK8sApiCoreV1Pod.js',
  'v1/PersistentVolumeClaim': 'kubernetes-models/_schemas/IoK8sApiCoreV1PersistentVolumeClaim.js',
  'v1/Namespace': 'kubernetes-models/_schemas/IoK8sApiCoreV1Namespace.js',
  'apps/v1/Deployment': 'kubernetes-models/_schemas/IoK8sApiAppsV1Deployment.js',
  'batch/v1/Job': 'kubernetes-models/_schemas/IoK8sApiBatchV1Job.js',
  'policy/v1/PodDisruptionBudget': 'kubernetes-models/_schemas/IoK8sApiPolicyV1PodDisruptionBudget.js',
  'autoscaling/v2/HorizontalPodAutoscaler': 'kubernetes-models/_schemas/IoK8sApiAutoscalingV2HorizontalPodAutoscaler.js',
  'networking.k8s.io/v1/Ingress': 'kubernetes-models/_schemas/IoK8sApiNetworkingV1Ingress.js',
  'networking.k8s.io/v1/NetworkPolicy': 'kubernetes-models/_schemas/IoK8sApiNetworkingV1NetworkPolicy.js',
  'monitoring.coreos.com/v1/ServiceMonitor':
    '@kubernetes-models/prometheus-operator/_schemas/ComGithubPrometheusOperatorPrometheusOperatorPkgApisMonitoringV1ServiceMonitor.js',
};

const loaded = new Map<string, Promise<Validate>>();
/** One import at a time: jest's module VM fails two concurrent imports that share a dependency (formats.js). */
let importing: Promise<unknown> = Promise.resolve();

/** The validator of one apiVersion/kind; the packages are ES modules, loaded with import(). */
function validatorOf(apiVersion: string, kind: string): Promise<Validate> | undefined {
  const key = `${apiVersion}/${kind}`;
  const file = SCHEMAS[key];
  if (!file) return undefined;
  if (!loaded.has(key)) {
    const next = importing.then(async () => ((await import(path.join(MODULES, file))) as { validate: Validate }).validate);
    importing = next.catch(() => undefined);
    loaded.set(key, next);
  }
  return loaded.get(key);
}

/**
 * A copy of `value` whose objects record which property names the validator looks up. A generated validator reads
 * every property its schema names (`data.spec`, `data.replicas`, ...), present or not, and enumerates the keys of
 * maps (labels, annotations, data), so a key it never read is one the schema does not have. An object it read
 * nothing of has a free-form schema (preserve-unknown-fields) and is not judged.
 */
function tracked(value: unknown, at: string, unread: (() => string[])[]): unknown {
  if (Array.isArray(value)) return value.map((v, i) => tracked(v, `${at}/${i}`, unread));
  if (value === null || typeof value !== 'object') return value;
  const read = new Set<string>();
  let enumerated = false;
  const children = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, tracked(v, `${at}/${k}`, unread)]));
  unread.push(() =>
    enumerated || read.size === 0
      ? []
      : Object.keys(children)
          .filter((k) => !read.has(k))
          .map((k) => `${at}/${k}`),
  );
  return new Proxy(children, {
    get(target, key, receiver) {
      if (typeof key === 'string') read.add(key);
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      if (typeof key === 'string') read.add(key);
      return Reflect.has(target, key);
    },
    ownKeys(target) {
      enumerated = true;
      return Reflect.ownKeys(target);
    },
  });
}

/** What the API server would refuse in one object, as readable lines; empty when it is valid. */
export async function schemaProblems(object: { apiVersion?: string; kind?: string; metadata?: { name?: string } }): Promise<string[]> {
  const name = `${object.kind}/${object.metadata?.name}`;
  const validate = await validatorOf(String(object.apiVersion), String(object.kind));
  if (!validate) return [`${name}: no schema for apiVersion ${object.apiVersion}, kind ${object.kind}`];
  const unread: (() => string[])[] = [];
  const ok = validate(tracked(object, '', unread));
  const invalid = ok
    ? []
    : (validate.errors ?? []).map((e) => `${name}: ${e.instancePath || '/'} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
  const unknown = unread.flatMap((f) => f()).map((p) => `${name}: ${p} is not a field of ${object.apiVersion} ${object.kind}`);
  return [...invalid, ...unknown];
}
