import { z } from 'zod';
import { ConfigError } from './load';

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).optional(),
  GATEWAY_CONFIG: z.string().optional(),
  GATEWAY_ADMIN_TOKEN: z.string().min(8, 'must be at least 8 characters').optional(),
  GATEWAY_DATA_DIR: z.string().min(1).default('./.gateway-data'),
  GATEWAY_PUBLIC_URL: z.url().optional(),
  DATABASE_URL: z.string().optional(),
  REDIS_URL: z.string().optional(),
  KAFKA_BROKERS: z.string().optional(),
  BUS: z.enum(['kafka', 'redis', 'memory']).optional(),
  /** Redis Streams key prefix, so several gateways can share one Redis without reading each other's events. */
  GATEWAY_BUS_PREFIX: z.string().regex(/^[\w:.-]+$/, 'letters, digits and : . _ - only').optional(),
  /** Express `trust proxy` for the public listener (e.g. "1" behind one load balancer), so clients are told apart. */
  TRUST_PROXY: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type GatewayEnv = z.infer<typeof envSchema> & { HOST: string; GATEWAY_PUBLIC_URL: string };

/** Reads the operator's environment; empty strings count as unset (the smoke test passes DATABASE_URL=''). */
export function readEnv(source: NodeJS.ProcessEnv = process.env, defaults: { host: string } = { host: '127.0.0.1' }): GatewayEnv {
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const r = envSchema.safeParse(cleaned);
  if (!r.success) {
    throw new ConfigError(`Invalid environment:\n${r.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}`);
  }
  const env = r.data;
  return {
    ...env,
    HOST: env.HOST ?? defaults.host,
    GATEWAY_PUBLIC_URL: (env.GATEWAY_PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/$/, ''),
  };
}
