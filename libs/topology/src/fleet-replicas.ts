import { EDGE, SERVICES } from './services';

/**
 * How many processes of each service the local fleet runs, and where each listens. Replica 0 of a service keeps the
 * port it has with one replica; replica r sits REPLICA_PORT_STRIDE * r above it, so the fleet's ports stay clear of
 * each other's metrics listeners (METRICS_PORT_OFFSET above each) and of the fleet broker's 9092.
 */
export const REPLICA_PORT_STRIDE = 100;
export const MAX_REPLICAS = 9;

export type FleetProcessName = typeof EDGE.name | (typeof SERVICES)[number]['name'];
export type ReplicaCounts = Record<FleetProcessName, number>;

const NAMES: readonly FleetProcessName[] = [EDGE.name, ...SERVICES.map((s) => s.name)];

/**
 * Reads a replica count: `N` for every service, `name=N,...` for some, or both (`2,text=3`). Throws a sentence
 * naming the fault on anything else. What is not named keeps `base` (one replica unless given).
 */
export function parseReplicas(spec: string, base: Partial<ReplicaCounts> = {}): ReplicaCounts {
  const counts = Object.fromEntries(NAMES.map((n) => [n, base[n] ?? 1])) as ReplicaCounts;
  const count = (v: string, what: string) => {
    const n = Number(v);
    if (!/^\d+$/.test(v.trim()) || n < 1 || n > MAX_REPLICAS) throw new Error(`${what}: "${v}" is not a replica count from 1 to ${MAX_REPLICAS}`);
    return n;
  };
  const parts = spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  if (parts.length === 0) throw new Error('replicas: give N, or name=N separated by commas');
  // Every-service counts first, so `text=3,2` means the same as `2,text=3`.
  for (const p of parts.filter((p) => !p.includes('='))) for (const n of NAMES) counts[n] = count(p, 'replicas');
  for (const p of parts.filter((p) => p.includes('='))) {
    const [name, value] = p.split('=', 2).map((s) => s.trim());
    if (!NAMES.includes(name as FleetProcessName)) throw new Error(`replicas: no fleet service named "${name}" (${NAMES.join(', ')})`);
    counts[name as FleetProcessName] = count(value, `replicas of ${name}`);
  }
  return counts;
}

/** The name of a service's replica r (0-based): the service's own name for the first, `name-2`, `name-3`, ... after. */
export const replicaName = (name: string, r: number): string => (r === 0 ? name : `${name}-${r + 1}`);

/** The port of a service's replica r, given the port its first replica takes. */
export const replicaPort = (first: number, r: number): number => first + REPLICA_PORT_STRIDE * r;
