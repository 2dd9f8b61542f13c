import { DEFAULT_CONFIG, parseConfig, ConfigError, readEnv, readFleetEnv, parseDuration, serviceUrl } from './index';

const base = () => JSON.parse(JSON.stringify(DEFAULT_CONFIG));

describe('config', () => {
  it('accepts the built-in demo config and fills defaults', () => {
    const cfg = parseConfig(base());
    expect(cfg.limits.rate_limit).toEqual({ requests: 600, interval: '60s' });
    expect(cfg.webhooks.max_retries).toBe(5);
    expect(cfg.limits).toMatchObject({ max_request_body: '8mb', max_audio_body: '35mb', hold_ttl: '15m' });
  });

  it.each([
    [
      'an unknown top-level key',
      (c: any) => {
        c.extra = 1;
      },
      '(root)',
    ],
    [
      'an unknown model key',
      (c: any) => {
        c.models[0].colour = 'red';
      },
      'models.0',
    ],
    [
      'a float price',
      (c: any) => {
        c.models[0].pricing.prompt = 0.1;
      },
      'models.0.pricing.prompt',
    ],
    [
      'an unknown provider kind',
      (c: any) => {
        c.providers[0].kind = 'magic';
      },
      'providers.0.kind',
    ],
    [
      'an endpoint on an unknown provider',
      (c: any) => {
        c.models[0].endpoints[0].provider = 'nope';
      },
      'models.0.endpoints.0.provider',
    ],
    [
      'a bad rate-limit interval',
      (c: any) => {
        c.limits = { rate_limit: { requests: 5, interval: 'soon' } };
      },
      'limits.rate_limit.interval',
    ],
    [
      'a slug without author',
      (c: any) => {
        c.models[0].id = 'chat';
      },
      'models.0.id',
    ],
    [
      'a text model without context_length',
      (c: any) => {
        delete c.models[0].context_length;
      },
      'models.0.context_length',
    ],
    [
      'a body limit that is not a size',
      (c: any) => {
        c.limits = { max_request_body: 'huge' };
      },
      'limits.max_request_body',
    ],
    [
      'an audio body limit that is not a size',
      (c: any) => {
        c.limits = { max_audio_body: '35 megabytes' };
      },
      'limits.max_audio_body',
    ],
    [
      'a hold lifetime that is not a duration',
      (c: any) => {
        c.limits = { hold_ttl: '15 minutes' };
      },
      'limits.hold_ttl',
    ],
    [
      'a hold lifetime under a minute',
      (c: any) => {
        c.limits = { hold_ttl: '30s' };
      },
      'limits.hold_ttl',
    ],
  ])('names the field for %s', (_name, mutate, field) => {
    const c = base();
    mutate(c);
    expect(() => parseConfig(c)).toThrow(ConfigError);
    try {
      parseConfig(c);
    } catch (e) {
      expect((e as Error).message).toContain(field);
    }
  });

  it('reads the environment, treating empty strings as unset', () => {
    const env = readEnv({ PORT: '9000', DATABASE_URL: '', BUS: '' });
    expect(env.PORT).toBe(9000);
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.GATEWAY_PUBLIC_URL).toBe('http://localhost:9000');
    expect(() => readEnv({ BUS: 'carrier-pigeon' })).toThrow(/BUS/);
  });

  it('puts the metrics listener 1000 above PORT unless METRICS_PORT says otherwise, and refuses clashes', () => {
    expect(readEnv({ PORT: '9000' }).METRICS_PORT).toBe(10_000);
    expect(readEnv({ PORT: '0' }).METRICS_PORT).toBe(0);
    expect(readEnv({ PORT: '9000', METRICS_PORT: '9100' }).METRICS_PORT).toBe(9100);
    expect(() => readEnv({ PORT: '9000', METRICS_PORT: '9000' })).toThrow(/METRICS_PORT: must differ from PORT/);
    expect(() => readEnv({ PORT: '65000' })).toThrow(/METRICS_PORT/);
  });

  it('reads the service URLs and the internal token through the one schema, naming a bad one', () => {
    const env = readEnv({ BILLING_URL: 'http://billing:8081/', GATEWAY_INTERNAL_TOKEN: 'x'.repeat(32) });
    expect(serviceUrl(env, 'billing', 'the edge')).toBe('http://billing:8081');
    expect(() => serviceUrl(env, 'text', 'the edge')).toThrow(/TEXT_URL: required for the edge in the fleet/);
    expect(() => readEnv({ TEXT_URL: 'text-service' })).toThrow(/TEXT_URL/);
    expect(() => readEnv({ GATEWAY_INTERNAL_TOKEN: 'short' })).toThrow(/GATEWAY_INTERNAL_TOKEN/);
  });

  it('a fleet process needs GATEWAY_INTERNAL_TOKEN (the embedded gateway does not) and binds loopback unless HOST says otherwise', () => {
    expect(() => readFleetEnv('billing service', {})).toThrow(/GATEWAY_INTERNAL_TOKEN: required for the billing service in the fleet/);
    expect(() => readFleetEnv('edge', { GATEWAY_INTERNAL_TOKEN: '' })).toThrow(/GATEWAY_INTERNAL_TOKEN: required/);
    expect(() => readFleetEnv('edge', { GATEWAY_INTERNAL_TOKEN: 'short' })).toThrow(/GATEWAY_INTERNAL_TOKEN: must be at least 16 characters/);
    // Everything else a fleet process needs (readFleetEnv's own tests: fleet-env.test.ts).
    const rest = { BUS: 'redis', REDIS_URL: 'redis://127.0.0.1:6379', GATEWAY_CONFIG: '/etc/gateway/config.yaml' };
    const env = readFleetEnv('edge', { ...rest, GATEWAY_INTERNAL_TOKEN: 'x'.repeat(16) });
    expect({ token: env.GATEWAY_INTERNAL_TOKEN, host: env.HOST }).toEqual({ token: 'x'.repeat(16), host: '127.0.0.1' });
    expect(readFleetEnv('edge', { ...rest, GATEWAY_INTERNAL_TOKEN: 'x'.repeat(16), HOST: '0.0.0.0' }).HOST).toBe('0.0.0.0');
    expect(readEnv({}).GATEWAY_INTERNAL_TOKEN).toBeUndefined();
  });

  it('parses durations', () => {
    expect(parseDuration('60s')).toBe(60_000);
    expect(parseDuration('5m')).toBe(300_000);
    expect(() => parseDuration('1 minute')).toThrow();
  });
});
