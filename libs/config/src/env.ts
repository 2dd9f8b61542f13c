import { z } from 'zod';
import { METRICS_PORT_OFFSET, SERVICES, serviceEntry, type ServiceName } from '@gateway/topology';
import { ConfigError } from './load';

const port = z.coerce.number().int().min(0).max(65535);

/** Every variable the gateway's processes read, in one schema (docs/operations.md lists them with their defaults). */
const envSchema = z.object({
  PORT: port.default(8080),
  HOST: z.string().min(1).optional(),
  /** Probes (/healthz, /readyz) and /metrics listen here, never on the public listener. Default PORT + 1000. */
  METRICS_PORT: port.optional(),
  GATEWAY_CONFIG: z.string().optional(),
  GATEWAY_ADMIN_TOKEN: z.string().min(8, 'must be at least 8 characters').optional(),
  GATEWAY_DATA_DIR: z.string().min(1).default('./.gateway-data'),
  GATEWAY_PUBLIC_URL: z.url().optional(),
  DATABASE_URL: z.string().optional(),
  REDIS_URL: z.string().optional(),
  KAFKA_BROKERS: z.string().optional(),
  BUS: z.enum(['kafka', 'redis', 'memory']).optional(),
  /** Redis Streams key prefix, so several gateways can share one Redis without reading each other's events. */
  GATEWAY_BUS_PREFIX: z
    .string()
    .regex(/^[\w:.-]+$/, 'letters, digits and : . _ - only')
    .optional(),
  /** Fleet: proves a request came from inside the fleet (the edge or a peer service). */
  GATEWAY_INTERNAL_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Express `trust proxy` for the public listener (e.g. "1" behind one load balancer), so clients are told apart. */
  TRUST_PROXY: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Read by tracing-register before anything else loads; validated here so a typo stops the start. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  // The fleet's peer addresses: one variable per service of the service table (BILLING_URL, TEXT_URL, ...).
  ...Object.fromEntries(SERVICES.map((s) => [s.urlEnv, z.url().optional()])),
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
  return {
    ...env,
    HOST: env.HOST ?? defaults.host,
    METRICS_PORT: metricsPort,
    GATEWAY_PUBLIC_URL: (env.GATEWAY_PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/$/, ''),
  };
}

/** A peer's base URL from its variable in the service table; a fleet process cannot start without it. */
export function serviceUrl(env: GatewayEnv, name: ServiceName, neededBy: string): string {
  const variable = serviceEntry(name).urlEnv;
  const url = (env as Record<string, unknown>)[variable];
  if (typeof url !== 'string') throw new ConfigError(`Invalid environment:\n  ${variable}: required for ${neededBy} in the fleet`);
  return url.replace(/\/$/, '');
}

/** The variables of the schema, for the docs test that keeps docs/operations.md complete. */
export const ENV_VARIABLES = Object.keys(envSchema.shape);
