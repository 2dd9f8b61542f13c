import crypto from 'node:crypto';
import { parseConfig, readEnv } from '@gateway/config';
import { startEmbedded } from '@gateway/gateway';
import { createLogger } from '@gateway/service-kit';
import { adminClient, openAccount, type TestGateway } from '../../support/harness';

export type EmbeddedGateway = Pick<TestGateway, 'url' | 'adminToken' | 'ledger' | 'admin' | 'account' | 'stop'>;

/**
 * An embedded gateway started the way the harness starts one, with environment variables of the caller's on top
 * (the listener's timeouts, which the harness does not set). It listens on a port of the system's choosing: the
 * suites that use it never fetch the absolute media URLs the gateway answers.
 */
export async function startEmbeddedWith(config: unknown, extraEnv: Record<string, string>): Promise<EmbeddedGateway> {
  const adminToken = `test-admin-${crypto.randomBytes(8).toString('hex')}`;
  const env = readEnv({ PORT: '0', METRICS_PORT: '0', HOST: '127.0.0.1', GATEWAY_ADMIN_TOKEN: adminToken, LOG_LEVEL: 'silent', ...extraEnv });
  const gw = await startEmbedded(env, parseConfig(config), createLogger('test', 'silent'));

  const admin = adminClient(gw.url, adminToken);

  return {
    url: gw.url,
    adminToken,
    // The embedded ledger is written behind to PGlite: a check reads the tables once they hold every decision so far.
    ledger: async (sql, params) => {
      await gw.ledgerFlushed();
      return (await gw.billingDb.query(sql, params)) as any[];
    },
    admin,
    account: (credits, opts) => openAccount(admin, credits, opts),
    stop: gw.stop,
  };
}
