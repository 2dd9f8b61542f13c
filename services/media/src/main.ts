import '@gateway/service-kit/tracing-register';
import path from 'node:path';
import { runSpendingService } from '@gateway/spend';
import { openFleetServiceDb } from '@gateway/db';
import { migrations } from './migrations';
import { mediaService } from './gateway-service';
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
  return { service: mediaService(media), ping: media.ping };
});
