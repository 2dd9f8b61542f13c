import { z } from 'zod';
import { METRICS_PORT_OFFSET, SERVICES, addressList, serviceEntry, type ServiceName } from '@gateway/topology';
import { ConfigError } from './load';

const port = z.coerce.number().int().min(0).max(65535);

/** A service's address: a base URL, or several separated by commas, one per replica (libs/topology/src/replicas.ts). */
const serviceAddress = z
  .string()
  .refine(
    (v) => addressList(v).length > 0 && addressList(v).every((u) => z.url().safeParse(u).success),
    'a base URL, or base URLs separated by commas (one per replica)',
  );

/** Every variable the gateway's processes read, in one schema (docs/operations.md lists them with their defaults). */
const envSchema = z.object({
  PORT: port.default(8080),
  HOST: z.string().min(1).optional(),
  /** Probes (/healthz, /readyz) and /metrics listen here, never on the public listener. Default PORT + 1000. */
  METRICS_PORT: port.optional(),
  GATEWAY_CONFIG: z.string().optional(),
  /**
   * Fleet: the operator's explicit consent to serve simulated upstreams (the built-in demo catalogue when
   * GATEWAY_CONFIG is unset, or a config with a `kind: simulated` provider), which bill accounts for made-up answers.
   */
  GATEWAY_DEMO_CATALOGUE: z.enum(['true', 'false']).optional(),
  GATEWAY_ADMIN_TOKEN: z.string().min(8, 'must be at least 8 characters').optional(),
  GATEWAY_DATA_DIR: z.string().min(1).default('./.gateway-data'),
  GATEWAY_PUBLIC_URL: z.url().optional(),
  /** Where the status monitor's `api` check calls the public API (GET /v1/models/count); default GATEWAY_PUBLIC_URL. */
  STATUS_API_URL: z.url().optional(),
  DATABASE_URL: z.string().optional(),
  REDIS_URL: z.string().optional(),
  KAFKA_BROKERS: z.string().optional(),
  /** Kafka: prepended to every topic and consumer-group name, so gateways sharing one cluster stay apart (deploy/kafka/topics.ts creates the topics). */
  KAFKA_TOPIC_PREFIX: z
    .string()
    .regex(/^[\w.-]+$/, 'letters, digits and . _ - only')
    .optional(),
  /** Kafka: TLS to the brokers (the system CAs, plus NODE_EXTRA_CA_CERTS). */
  KAFKA_SSL: z.enum(['true', 'false']).optional(),
  /** Kafka: SASL authentication; the username and password go with the mechanism. */
  KAFKA_SASL_MECHANISM: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).optional(),
  KAFKA_SASL_USERNAME: z.string().min(1).optional(),
  KAFKA_SASL_PASSWORD: z.string().min(1).optional(),
  BUS: z.enum(['kafka', 'redis', 'memory']).optional(),
  /** Redis Streams key prefix, so several gateways can share one Redis without reading each other's events. */
  GATEWAY_BUS_PREFIX: z
    .string()
    .regex(/^[\w:.-]+$/, 'letters, digits and : . _ - only')
    .optional(),
  /** Kafka with KAFKA_SSL=true: the brokers' CA certificate (PEM), trusted instead of the system CAs. */
  KAFKA_SSL_CA_FILE: z.string().min(1).optional(),
  /** Kafka: partitions of each topic the gateway creates (a missing one, before its first use). Default 3. */
  KAFKA_TOPIC_PARTITIONS: z.coerce.number().int().min(1).max(10_000).optional(),
  /** Kafka: replicas of each topic the gateway creates. Default: the brokers' default.replication.factor. */
  KAFKA_TOPIC_REPLICATION: z.coerce.number().int().min(1).max(32).optional(),
  /** Redis key prefix of the rate meter, so gateways sharing one Redis keep separate counts. */
  GATEWAY_METER_PREFIX: z
    .string()
    .regex(/^[\w:.-]+$/, 'letters, digits and : . _ - only')
    .optional(),
  /** Fleet: proves a request came from inside the fleet (the edge or a peer service). */
  GATEWAY_INTERNAL_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Fleet: one more internal token every service accepts and none sends, so the token rotates without an outage. */
  GATEWAY_INTERNAL_TOKEN_ACCEPTED: z.string().min(16, 'must be at least 16 characters').optional(),
  /** How long a client may take to send a request's headers (Node's headersTimeout, default 60 s): slowloris is cut then. */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1).optional(),
  /** How long a client may take to send a whole request, headers and body (Node's requestTimeout, default 300 s). */
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1).optional(),
  /** Open connections each listener accepts; the excess is closed as accepted (service-kit's connection-limits). */
  HTTP_MAX_CONNECTIONS: z.coerce.number().int().min(1).optional(),
  /** Open connections the public listener accepts from one client address; 0: no such limit (behind a proxy). */
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(0).optional(),
  /** Express `trust proxy` for the public listener (e.g. "1" behind one load balancer), so clients are told apart. */
  TRUST_PROXY: z.string().min(1).optional(),
  /**
   * The time a process has from SIGTERM until it must have exited (service-kit's serve): in Kubernetes the grace
   * period minus the preStop sleep. Requests get what the reserves for closing holds and the bus leave. Default 25 s.
   */
  DRAIN_TIMEOUT_MS: z.coerce.number().int().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** The media service's S3 bucket for generated bytes; unset, it keeps them under GATEWAY_DATA_DIR. */
  MEDIA_S3_BUCKET: z.string().min(3).optional(),
  MEDIA_S3_PREFIX: z.string().min(1).optional(),
  MEDIA_S3_REGION: z.string().min(1).optional(),
  MEDIA_S3_ENDPOINT: z.url().optional(),
  MEDIA_S3_FORCE_PATH_STYLE: z.enum(['true', 'false']).optional(),
  /** The AWS SDK reads these itself (its standard chain); listed so the docs and manifests name them. */
  AWS_ACCESS_KEY_ID: z.string().min(1).optional(),
  AWS_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** Read by tracing-register before anything else loads; validated here so a typo stops the start. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  /** The edge's base URL, which the mcp service's tools call with the caller's key (embedded: its own listener). */
  EDGE_URL: serviceAddress.optional(),
  // The fleet's peer addresses: one variable per service of the service table (BILLING_URL, TEXT_URL, ...), each a
  // base URL or a comma-separated list of them, one per replica.
  ...Object.fromEntries(SERVICES.map((s) => [s.urlEnv, serviceAddress.optional()])),
});

type Parsed = z.infer<typeof envSchema>;
export type GatewayEnv = Parsed & { HOST: string; GATEWAY_PUBLIC_URL: string; METRICS_PORT: number };

/** Reads the operator's environment; empty strings count as unset (the smoke test passes DATABASE_URL=''). */
export function readEnv(source: NodeJS.ProcessEnv = process.env, defaults: { host: string } = { host: '127.0.0.1' }): GatewayEnv {
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const r = envSchema.safeParse(cleaned);
  if (!r.success) {
    throw new ConfigError(`Invalid environment:\n${r.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}`);
  }
  const env = r.data;
  // PORT 0 asks the system for a free port; the metrics listener then gets one of its own the same way.
  const metricsPort = env.METRICS_PORT ?? (env.PORT === 0 ? 0 : env.PORT + METRICS_PORT_OFFSET);
  if (metricsPort > 65535)
    throw new ConfigError(`Invalid environment:\n  METRICS_PORT: PORT + ${METRICS_PORT_OFFSET} is above 65535; set METRICS_PORT`);
  if (metricsPort !== 0 && metricsPort === env.PORT) throw new ConfigError('Invalid environment:\n  METRICS_PORT: must differ from PORT');
  const kafka = kafkaProblems(env);
  if (kafka.length) throw new ConfigError(`Invalid environment:\n${kafka.map((p) => `  ${p}`).join('\n')}`);
  // The listener's defaults (service-kit's serve): Node refuses a headers timeout longer than the request's.
  if ((env.HTTP_HEADERS_TIMEOUT_MS ?? 60_000) > (env.HTTP_REQUEST_TIMEOUT_MS ?? 300_000))
    throw new ConfigError('Invalid environment:\n  HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS (default 300000)');
  return {
    ...env,
    HOST: env.HOST ?? defaults.host,
    METRICS_PORT: metricsPort,
    GATEWAY_PUBLIC_URL: (env.GATEWAY_PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/$/, ''),
  };
}

/** What one Kafka variable needs of another; each field is valid on its own by then. */
function kafkaProblems(env: Parsed): string[] {
  const problems: string[] = [];
  const sasl = env.KAFKA_SASL_MECHANISM;
  // Credentials without a mechanism are unused, not refused: the manifests pass the Secret's password whether or not SASL is on.
  for (const v of ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'] as const) {
    if (sasl && !env[v]) problems.push(`${v}: required with KAFKA_SASL_MECHANISM=${sasl}`);
  }
  if (env.KAFKA_SSL_CA_FILE && env.KAFKA_SSL !== 'true') problems.push('KAFKA_SSL_CA_FILE: set without KAFKA_SSL=true');
  return problems;
}

/** A fleet process's environment: the shared internal token and a bus that crosses processes are always there. */
export type FleetEnv = GatewayEnv & { GATEWAY_INTERNAL_TOKEN: string; BUS: 'redis' | 'kafka' };

/**
 * The environment of a fleet process (the edge or a service of the service table), refused whole when it cannot
 * run safely, each problem naming its variable:
 * - GATEWAY_INTERNAL_TOKEN: its listener is reachable by whatever can reach its address, so the token is what tells
 *   a peer from anyone else; without one it would trust every caller.
 * - BUS: holds are opened in one process and settled by billing in another, so the bus must cross processes. The
 *   in-memory bus (or none, which openBus would turn into the in-memory one) would lose every settle.
 * - GATEWAY_CONFIG: unset, the process would serve the built-in simulated demo catalogue and bill real accounts for
 *   its made-up answers; GATEWAY_DEMO_CATALOGUE=true is the operator saying that is what they want.
 * Binds loopback unless HOST says otherwise (the image and the manifests set 0.0.0.0). The embedded gateway
 * (readEnv) has no internal listener and one process: it needs none of this.
 */
export function readFleetEnv(service: string, source: NodeJS.ProcessEnv = process.env): FleetEnv {
  const env = readEnv(source);
  const who = `the ${service} in the fleet`;
  const problems: string[] = [];
  const token = env.GATEWAY_INTERNAL_TOKEN;
  if (!token) problems.push(`GATEWAY_INTERNAL_TOKEN: required for ${who} (the same secret of at least 16 characters in every fleet process)`);
  const bus = env.BUS;
  if (!bus) problems.push(`BUS: required for ${who}: redis or kafka (every fleet process must share one bus)`);
  else if (bus === 'memory') problems.push(`BUS: "memory" cannot carry events between processes; ${who} needs redis or kafka`);
  else if (bus === 'redis' && !env.REDIS_URL) problems.push(`REDIS_URL: required with BUS=redis for ${who}`);
  else if (bus === 'kafka' && !env.KAFKA_BROKERS) problems.push(`KAFKA_BROKERS: required with BUS=kafka for ${who}`);
  if (!env.GATEWAY_CONFIG && env.GATEWAY_DEMO_CATALOGUE !== 'true')
    problems.push(
      `GATEWAY_CONFIG: required for ${who}; unset, it would bill accounts for the built-in simulated demo catalogue (set GATEWAY_DEMO_CATALOGUE=true if that is what you want)`,
    );
  if (problems.length || !token || (bus !== 'redis' && bus !== 'kafka'))
    throw new ConfigError(`Invalid environment:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  return { ...env, GATEWAY_INTERNAL_TOKEN: token, BUS: bus };
}

/**
 * A peer's address from its variable in the service table (its base URL, or its replicas' separated by commas, each
 * without a trailing slash); a fleet process cannot start without it.
 */
export function serviceUrl(env: GatewayEnv, name: ServiceName, neededBy: string): string {
  const variable = serviceEntry(name).urlEnv;
  const url = (env as Record<string, unknown>)[variable];
  if (typeof url !== 'string') throw new ConfigError(`Invalid environment:\n  ${variable}: required for ${neededBy} in the fleet`);
  return addressList(url).join(',');
}

/** The variables of the schema, for the docs test that keeps docs/operations.md complete. */
export const ENV_VARIABLES = Object.keys(envSchema.shape);
