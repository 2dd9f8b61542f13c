import { DEFAULT_CONFIG, parseConfig, ConfigError, readEnv, parseDuration } from './index';

const base = () => JSON.parse(JSON.stringify(DEFAULT_CONFIG));

describe('config', () => {
  it('accepts the built-in demo config and fills defaults', () => {
    const cfg = parseConfig(base());
    expect(cfg.limits.rate_limit).toEqual({ requests: 600, interval: '60s' });
    expect(cfg.webhooks.max_retries).toBe(5);
  });

  it.each([
    ['an unknown top-level key', (c: any) => { c.extra = 1; }, '(root)'],
    ['an unknown model key', (c: any) => { c.models[0].colour = 'red'; }, 'models.0'],
    ['a float price', (c: any) => { c.models[0].pricing.prompt = 0.1; }, 'models.0.pricing.prompt'],
    ['an unknown provider kind', (c: any) => { c.providers[0].kind = 'magic'; }, 'providers.0.kind'],
    ['an endpoint on an unknown provider', (c: any) => { c.models[0].endpoints[0].provider = 'nope'; }, 'models.0.endpoints.0.provider'],
    ['a bad rate-limit interval', (c: any) => { c.limits = { rate_limit: { requests: 5, interval: 'soon' } }; }, 'limits.rate_limit.interval'],
    ['a slug without author', (c: any) => { c.models[0].id = 'chat'; }, 'models.0.id'],
  ])('names the field for %s', (_name, mutate, field) => {
    const c = base();
    mutate(c);
    expect(() => parseConfig(c)).toThrow(ConfigError);
    try { parseConfig(c); } catch (e) { expect((e as Error).message).toContain(field); }
  });

  it('reads the environment, treating empty strings as unset', () => {
    const env = readEnv({ PORT: '9000', DATABASE_URL: '', BUS: '' });
    expect(env.PORT).toBe(9000);
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.GATEWAY_PUBLIC_URL).toBe('http://localhost:9000');
    expect(() => readEnv({ BUS: 'carrier-pigeon' })).toThrow(/BUS/);
  });

  it('parses durations', () => {
    expect(parseDuration('60s')).toBe(60_000);
    expect(parseDuration('5m')).toBe(300_000);
    expect(() => parseDuration('1 minute')).toThrow();
  });
});
