export {
  configSchema,
  rateLimitSchema,
  type GatewayConfig,
  type ModelConfig,
  type ProviderConfig,
  type Pricing,
  parseDuration,
  resolutionKey,
  MODALITIES,
  ROUTING_STRATEGIES,
} from './schema';
export { providerPreferencesSchema, type ProviderPreferences } from './provider-preferences';
export { maxCostSchema, spendControlFields } from './max-cost';
export { loadConfig, parseConfig, ConfigError } from './load';
export { DEFAULT_CONFIG } from './default-config';
export { loadFleetConfig } from './fleet-config';
export { readEnv, readFleetEnv, serviceUrl, ENV_VARIABLES, type FleetEnv, type GatewayEnv } from './env';
export { buildRegistry, type ModelRegistry, type ResolvedModel, type ResolvedEndpoint } from './registry';
