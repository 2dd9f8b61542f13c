/**
 * The service table. Everything that needs to know which services exist reads it: the edge's routing, the
 * embedded gateway's composition, the local fleet runner, and the test that keeps the Helm chart and k8s/ in line.
 * Adding a service is one folder under services/ plus one entry here (docs/architecture.md, "Adding a service").
 */

export interface ServiceEntry {
  /** Folder under services/, the Deployment/Service name in k8s/ and the key under `services:` in the Helm chart. */
  readonly name: string;
  /** Fleet default port; the edge's is PORT (8080), each service's sits at a fixed offset from it. */
  readonly port: number;
  /** The variable that gives its peers this service's base URL. */
  readonly urlEnv: string;
  /** GET paths answered without a key (metered per client address). */
  readonly publicPaths: readonly RegExp[];
  /** Paths that need an API key. */
  readonly keyedPaths: readonly RegExp[];
  /** Owns the admin API (/admin/v1/*). */
  readonly admin?: boolean;
  /** Peers this service calls directly (their URL variables are in its environment). */
  readonly peers: readonly ServiceName[];
  /** The others' requests depend on it being up (billing: holds, keys), so the fleet starts it before them. */
  readonly startsFirst?: boolean;
  /**
   * The services that start before this one where one process runs several (the embedded gateway), and so stop
   * after it (startOrder). Absent, its peers: a service starts once what it calls has started.
   */
  readonly startsAfter?: readonly ServiceName[];
  /**
   * Calls the gateway's public routes on the caller's behalf, so the edge hands it the caller's verified key
   * (INTERNAL.apiKey). The edge strips the client's credential headers from every other service's requests.
   */
  readonly actsForCaller?: boolean;
}

export const EDGE = { name: 'edge', port: 8080 } as const;

/** Probes and Prometheus metrics are served on their own listener at PORT + this, never on the public one. */
export const METRICS_PORT_OFFSET = 1000;

export const SERVICES = [
  {
    name: 'billing',
    port: 8081,
    urlEnv: 'BILLING_URL',
    publicPaths: [],
    keyedPaths: [/^\/v1\/(key|credits|generations?|activity)\/?$/],
    admin: true,
    peers: [],
    startsFirst: true,
    // Its start announces every account (account.opened), and the catalogue counts them: it subscribes first.
    startsAfter: ['catalogue'],
  },
  {
    name: 'text',
    port: 8082,
    urlEnv: 'TEXT_URL',
    publicPaths: [],
    keyedPaths: [/^\/v1\/(chat\/completions|completions|messages|responses|embeddings|rerank)\/?$/],
    peers: ['billing'],
  },
  {
    name: 'media',
    port: 8084,
    urlEnv: 'MEDIA_URL',
    publicPaths: [],
    keyedPaths: [/^\/v1\/files\/[^/]+\/?$/, /^\/v1\/images(\/generations)?\/?$/, /^\/v1\/audio\/(speech|transcriptions)\/?$/],
    peers: ['billing'],
  },
  {
    name: 'jobs',
    port: 8086,
    urlEnv: 'JOBS_URL',
    publicPaths: [],
    keyedPaths: [/^\/v1\/queue\/.+/, /^\/v1\/videos(\/generations)?\/?$/, /^\/v1\/videos\/[^/]+(\/content)?\/?$/, /^\/v1\/jobs\/?$/],
    // Holds from billing; a finished job's video is kept in, and streamed from, the media service's file store.
    peers: ['billing', 'media'],
  },
  {
    name: 'catalogue',
    port: 8083,
    urlEnv: 'CATALOGUE_URL',
    publicPaths: [
      /^\/v1\/models(\/count|\/user)?\/?$/,
      /^\/v1\/model\/[^/]+\/[^/]+\/?$/,
      /^\/v1\/(embeddings|images|videos)\/models\/?$/,
      /^\/v1\/(catalog|stats|status)\/?$/,
      // The status page, rendered from /v1/status's answer by the service that owns it.
      /^\/status\/?$/,
    ],
    keyedPaths: [],
    // The status monitor pings billing (the payments component); the catalogue answers without it.
    peers: ['billing'],
    // Hence it needs no billing to start, and must not wait for it: its consumers subscribe before billing announces.
    startsAfter: [],
  },
  {
    name: 'mcp',
    port: 8085,
    urlEnv: 'MCP_URL',
    publicPaths: [],
    keyedPaths: [/^\/v1\/mcp\/?$/],
    // Its tools call the edge (EDGE_URL), not its peers directly, so every call is metered and billed as a client's.
    peers: [],
    actsForCaller: true,
  },
] as const satisfies readonly (Omit<ServiceEntry, 'peers' | 'startsAfter'> & { peers: readonly string[]; startsAfter?: readonly string[] })[];

export type ServiceName = (typeof SERVICES)[number]['name'];

export const SERVICE_NAMES = SERVICES.map((s) => s.name) as ServiceName[];

export function serviceEntry(name: ServiceName): ServiceEntry {
  return SERVICES.find((s) => s.name === name) as ServiceEntry;
}

/** What `name` starts after (ServiceEntry.startsAfter, else its peers). */
export function startsAfter(name: ServiceName): readonly ServiceName[] {
  const entry = serviceEntry(name);
  return entry.startsAfter ?? entry.peers;
}

/** The service answering a GET on `path` without a key, if any. */
export function publicOwner(path: string): ServiceName | undefined {
  return SERVICES.find((s) => (s.publicPaths as readonly RegExp[]).some((p) => p.test(path)))?.name;
}

/** Whether the edge hands `name` the caller's verified key (see ServiceEntry.actsForCaller). */
export function actsForCaller(name: ServiceName): boolean {
  return serviceEntry(name).actsForCaller === true;
}

/** The service owning a keyed `path`, if any. */
export function keyedOwner(path: string): ServiceName | undefined {
  return SERVICES.find((s) => (s.keyedPaths as readonly RegExp[]).some((p) => p.test(path)))?.name;
}

function adminOwner(): ServiceName {
  const owner = SERVICES.find((s) => 'admin' in s && s.admin);
  if (!owner) throw new Error('topology: no service in SERVICES owns the admin API');
  return owner.name;
}

export const ADMIN_OWNER = adminOwner();
