import { Writable } from 'node:stream';
import { createLogger } from './logger';

/** Every line a logger writes, as text: what an operator's log pipeline would receive. */
function captured() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger('test', 'debug', destination), text: () => lines.join('') };
}

const KEY = 'sk_live_AAAAbbbbCCCCddddEEEEffffGGGGhhhhIIIIjjjjKKKKllll';
const ADMIN = 'gwadm_0123456789abcdefghijABCDEFGHIJ0123456789';
const WHSEC = 'whsec_0123456789abcdefghijABCDEFGHIJ01234567';
const PROVIDER = 'sk-provider-secret-0123456789';

describe('createLogger redacts credentials and secrets', () => {
  it('in request headers, however a caller nests them', () => {
    const { logger, text } = captured();
    logger.info({ req: { method: 'POST', url: '/v1/chat/completions', headers: { authorization: `Bearer ${KEY}`, 'x-api-key': KEY } } }, 'request');
    logger.warn({ headers: { authorization: `Bearer ${ADMIN}`, cookie: `s=${KEY}` } }, 'admin call');
    logger.error({ upstream: { headers: { authorization: `Bearer ${PROVIDER}` } } }, 'upstream call failed');
    const err = Object.assign(new Error('upstream refused'), { headers: { authorization: `Bearer ${PROVIDER}` } });
    logger.error({ err }, 'with an error that carries its request');
    const out = text();
    for (const secret of [KEY, ADMIN, PROVIDER]) expect(out).not.toContain(secret);
    expect(out.match(/\[redacted\]/g)?.length).toBeGreaterThanOrEqual(6);
    expect(out).toContain('upstream refused'); // the rest of the line stays
  });

  it('in fields named for secrets: webhook secrets, API keys, the admin token', () => {
    const { logger, text } = captured();
    logger.info({ accountId: 'acct_1', webhook_secret: WHSEC, secret: WHSEC }, 'secret rotated');
    logger.info({ account: { webhookSecret: WHSEC, apiKey: KEY }, adminToken: ADMIN, api_key: PROVIDER }, 'settings');
    const out = text();
    for (const secret of [KEY, ADMIN, PROVIDER, WHSEC]) expect(out).not.toContain(secret);
    expect(out).toContain('acct_1');
  });
});
