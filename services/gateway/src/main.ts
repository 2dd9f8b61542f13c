import '@gateway/service-kit/tracing-register';
import './start-databases-early';
import path from 'node:path';
import { loadConfig, readEnv } from '@gateway/config';
import { createLogger, runMain } from '@gateway/service-kit';
import { startEmbedded } from './embedded';

/** `pnpm start`: the embedded gateway. */
runMain('gateway', async () => {
  const env = readEnv(process.env, { host: '127.0.0.1' });
  const config = loadConfig(env.GATEWAY_CONFIG);
  const logger = createLogger('gateway', env.LOG_LEVEL);
  const dataDir = path.resolve(env.GATEWAY_DATA_DIR);
  const gw = await startEmbedded(env, config, logger, { dataDir: env.DATABASE_URL ? undefined : dataDir });

  const lines = [
    '',
    `Model gateway listening on ${gw.url} (public URL ${env.GATEWAY_PUBLIC_URL})`,
    `  models: ${config.models.length} from ${env.GATEWAY_CONFIG ?? 'the built-in demo config (simulated upstreams)'}`,
    `  data:   ${env.DATABASE_URL ? 'PostgreSQL (DATABASE_URL)' : dataDir}`,
  ];
  if (gw.demo) {
    lines.push(`  Demo account ${gw.demo.accountId} created with 10.00 USD of credit.`);
    lines.push(`  Demo API key (shown once, keep it): ${gw.demo.key}`);
  }
  if (gw.generatedAdminToken) lines.push(`  Admin token (generated, shown once, keep it): ${gw.generatedAdminToken}`);
  lines.push(`  Try: curl ${gw.url}/v1/models`, '');
  process.stdout.write(`${lines.join('\n')}\n`);
  return { stop: gw.stop, logger };
});
