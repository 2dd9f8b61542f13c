import '@gateway/service-kit/tracing-register';
import path from 'node:path';
import { runSpendingService } from '@gateway/spend';
import { openFleetServiceDb } from '@gateway/db';
import { migrations } from './migrations';
import { openMedia, s3OptionsOf } from './open';

/** Fleet entry: the media routes as their own process. */
runSpendingService('media', async (spend, env, config) => {
  const dataDir = path.resolve(env.GATEWAY_DATA_DIR);
  const media = await openMedia(config, spend, {
    db: await openFleetServiceDb('media', migrations, { databaseUrl: env.DATABASE_URL, dataDir, logger: spend.logger }),
    dataDir,
    publicUrl: env.GATEWAY_PUBLIC_URL,
    s3: s3OptionsOf(env),
  });
  media.service.start();
  return { router: media.service.router, ping: media.ping, close: media.close };
});
