import fs from 'node:fs';
import YAML from 'yaml';
import { configSchema, type GatewayConfig } from './schema';
import { DEFAULT_CONFIG } from './default-config';

/** A config problem names the field; the caller prints it and exits 1. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function parseConfig(raw: unknown, source = 'config'): GatewayConfig {
  const result = configSchema.safeParse(raw);
  if (result.success) return result.data;
  const lines = result.error.issues.map((i) => `  ${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`);
  throw new ConfigError(`Invalid ${source}:\n${lines.join('\n')}`);
}

export function loadConfig(path: string | undefined): GatewayConfig {
  if (!path) return parseConfig(DEFAULT_CONFIG, 'built-in demo config');
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`GATEWAY_CONFIG: cannot read ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = /\.json$/i.test(path) ? JSON.parse(text) : YAML.parse(text);
  } catch (e) {
    throw new ConfigError(`GATEWAY_CONFIG: ${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${(e as Error).message}`);
  }
  return parseConfig(raw, `config file ${path}`);
}
