import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { DEFAULT_CONFIG } from './default-config';
import { parseConfig } from './load';

const ROOT = path.resolve(__dirname, '../../..');

/** The cluster's default catalogue is the embedded one: a fresh install answers the same demo models either way. */
describe('the deploy manifests ship the built-in demo catalogue', () => {
  const manifests = {
    'k8s/gateway-config.yaml': () => YAML.parse(fs.readFileSync(path.join(ROOT, 'k8s/gateway-config.yaml'), 'utf8')),
    // Read as Helm reads values files: YAML 1.1, where a bare n is false (read as 1.2, this test once hid that).
    'the Helm chart (values.yaml gatewayConfig)': () =>
      YAML.parse(fs.readFileSync(path.join(ROOT, 'deploy/helm/model-gateway/values.yaml'), 'utf8'), { version: '1.1' }).gatewayConfig,
  };

  it.each(Object.entries(manifests))('%s: the same providers and models as the default config, and a valid config', (_name, read) => {
    const config = read();
    expect(config.models).toEqual(DEFAULT_CONFIG.models);
    expect(config.providers).toEqual(DEFAULT_CONFIG.providers);
    expect(() => parseConfig(config)).not.toThrow();
  });
});
