/**
 * The environment a container would start with, resolved from the objects beside it the way the kubelet does:
 * literal values, secretKeyRef / configMapKeyRef (a missing key of a required reference is what leaves a pod in
 * CreateContainerConfigError), envFrom, and the config file mounted from a ConfigMap.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: a rendered object's spec is whatever its kind says; the schema check types it
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** Secrets and ConfigMaps by name: key -> value (Secrets decoded). */
export type Store = Record<string, Record<string, string>>;

export function storesOf(objects: KubeObject[], extra: { secrets?: Store; configMaps?: Store } = {}): { secrets: Store; configMaps: Store } {
  const secrets: Store = { ...extra.secrets };
  const configMaps: Store = { ...extra.configMaps };
  for (const o of objects) {
    if (o.kind === 'Secret')
      secrets[o.metadata.name] = {
        ...Object.fromEntries(Object.entries(o.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])),
        ...o.stringData,
      };
    if (o.kind === 'ConfigMap') configMaps[o.metadata.name] = { ...o.data };
  }
  return { secrets, configMaps };
}

export interface ContainerEnv {
  deployment: string;
  container: string;
  /** The service key (app.kubernetes.io/component). */
  component: string;
  env: Record<string, string>;
  /** Names set with `env` (not envFrom), to hold against the variables the code reads. */
  names: string[];
  /** References the kubelet could not resolve: the pod would not start. */
  unresolved: string[];
}

type Ref = { name: string; key: string; optional?: boolean };

/**
 * Every container of every Deployment (or of the kinds given: a Job's pod template is in the same place). A ConfigMap volume's files are written under `dir` and the variables that
 * name a path inside the mount (GATEWAY_CONFIG) are pointed at the copy, so the code reads what the pod would.
 */
export function containerEnvironments(
  objects: KubeObject[],
  stores: { secrets: Store; configMaps: Store },
  dir: string,
  kinds: string[] = ['Deployment'],
): ContainerEnv[] {
  const out: ContainerEnv[] = [];
  for (const d of objects.filter((o) => kinds.includes(o.kind))) {
    const pod = d.spec.template.spec;
    for (const c of pod.containers) {
      const env: Record<string, string> = {};
      const unresolved: string[] = [];
      const lookup = (store: Store, kind: string, ref: Ref): string | undefined => {
        const value = store[ref.name]?.[ref.key];
        if (value === undefined && !ref.optional) unresolved.push(`${kind} ${ref.name} has no key ${ref.key}`);
        return value;
      };
      for (const from of c.envFrom ?? []) {
        const ref = from.secretRef ?? from.configMapRef;
        const store = from.secretRef ? stores.secrets : stores.configMaps;
        if (store[ref.name]) Object.assign(env, store[ref.name]);
        else if (!ref.optional) unresolved.push(`${from.secretRef ? 'Secret' : 'ConfigMap'} ${ref.name} does not exist`);
      }
      for (const v of c.env ?? []) {
        const value =
          v.value ??
          (v.valueFrom?.secretKeyRef
            ? lookup(stores.secrets, 'Secret', v.valueFrom.secretKeyRef)
            : v.valueFrom?.configMapKeyRef
              ? lookup(stores.configMaps, 'ConfigMap', v.valueFrom.configMapKeyRef)
              : undefined);
        if (value !== undefined) env[v.name] = value;
      }
      for (const mount of c.volumeMounts ?? []) {
        const volume = (pod.volumes ?? []).find((v: { name: string }) => v.name === mount.name);
        if (!volume?.configMap) continue;
        const data = stores.configMaps[volume.configMap.name];
        if (!data) {
          if (volume.configMap.optional) continue;
          unresolved.push(`ConfigMap ${volume.configMap.name} (volume ${mount.name}) does not exist`);
          continue;
        }
        const copy = path.join(dir, d.metadata.name, mount.name);
        fs.mkdirSync(copy, { recursive: true });
        const items: { key: string; path: string }[] = volume.configMap.items ?? Object.keys(data).map((key) => ({ key, path: key }));
        for (const item of items) {
          if (data[item.key] === undefined) unresolved.push(`ConfigMap ${volume.configMap.name} has no key ${item.key}`);
          else fs.writeFileSync(path.join(copy, item.path), data[item.key]);
        }
        for (const [name, value] of Object.entries(env))
          if (value.startsWith(`${mount.mountPath}/`)) env[name] = path.join(copy, value.slice(mount.mountPath.length + 1));
      }
      out.push({
        deployment: d.metadata.name,
        container: c.name,
        component: d.metadata.labels?.['app.kubernetes.io/component'] ?? d.metadata.name,
        env,
        names: (c.env ?? []).map((v: { name: string }) => v.name),
        unresolved,
      });
    }
  }
  return out;
}
