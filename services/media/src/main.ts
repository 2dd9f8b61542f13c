import '@gateway/service-kit/src/tracing-register';
import path from 'node:path';
import { runSpendingService } from '@gateway/spend';
import { openMedia, s3OptionsOf } from './open';

/** Fleet entry: the media routes as their own process. */
runSpendingService('media', async (spend, env, config) => {
  const media = await openMedia(config, spend, {
    databaseUrl: env.DATABASE_URL,
    dataDir: path.resolve(env.GATEWAY_DATA_DIR),
    publicUrl: env.GATEWAY_PUBLIC_URL,
    s3: s3OptionsOf(env),
  });
  media.service.start();
  return { router: media.service.router, ping: media.ping, close: media.close };
});
