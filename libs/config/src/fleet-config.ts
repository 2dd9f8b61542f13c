import type { FleetEnv } from './env';
import { ConfigError, loadConfig } from './load';
import type { GatewayConfig } from './schema';

/**
 * A fleet process's config. A simulated provider answers with made-up output yet its models are billed like any
 * other, so a fleet serves one only with the operator's consent (GATEWAY_DEMO_CATALOGUE=true): the built-in demo
 * catalogue is refused before this (readFleetEnv), and so is a copy of it in a file, such as k8s/gateway-config.yaml.
 */
export function loadFleetConfig(env: FleetEnv, service: string): GatewayConfig {
  const config = loadConfig(env.GATEWAY_CONFIG);
  if (env.GATEWAY_DEMO_CATALOGUE === 'true') return config;
  const simulated = config.providers.filter((p) => p.kind === 'simulated').map((p) => p.id);
  if (simulated.length)
    throw new ConfigError(
      `Invalid environment:\n  GATEWAY_CONFIG: ${env.GATEWAY_CONFIG} has simulated providers (${simulated.join(', ')}), which would bill accounts for made-up answers in the ${service}; replace them with real upstreams, or set GATEWAY_DEMO_CATALOGUE=true if a demo is what you want`,
    );
  return config;
}
