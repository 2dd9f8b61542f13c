import '@gateway/service-kit/tracing-register';
import path from 'node:path';
import { createBillingHttpClient } from '@gateway/billing-client';
import { serviceUrl } from '@gateway/config';
import { runSpendingService } from '@gateway/spend';
import { httpMediaFiles } from './media/http';
import { openFleetServiceDb } from '@gateway/db';
import { migrations } from './migrations';
import { jobsService } from './gateway-service';
import { openJobs } from './open';

/** Fleet entry: the job routes, the worker, the outbox relay and the webhook dispatcher as one process. */
runSpendingService('jobs', async (spend, env, config) => {
  const accounts = createBillingHttpClient(serviceUrl(env, 'billing', 'the jobs service'), env.GATEWAY_INTERNAL_TOKEN);
  const media = httpMediaFiles(serviceUrl(env, 'media', 'the jobs service'), env.GATEWAY_INTERNAL_TOKEN);
  const jobs = await openJobs(
    config,
    spend,
    { accounts, media },
    {
      db: await openFleetServiceDb('jobs', migrations, {
        databaseUrl: env.DATABASE_URL,
        dataDir: path.resolve(env.GATEWAY_DATA_DIR),
        logger: spend.logger,
      }),
      dataDir: path.resolve(env.GATEWAY_DATA_DIR),
      publicUrl: env.GATEWAY_PUBLIC_URL,
    },
  );
  return {
    service: jobsService(jobs),
    // Its peers' clients close after it, in reverse: billing's, then media's.
    opened: [
      { name: 'media client', close: () => media.close() },
      { name: 'accounts client', close: () => accounts.close() },
    ],
    ping: jobs.ping,
  };
});
