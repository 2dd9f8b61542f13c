import type { GatewayService } from '@gateway/service-kit';
import type { openMedia } from './open';

/**
 * Media in the one lifecycle: its file sweep starts at start; its store and database close after the bus. With
 * `storageIsOwn` (embedded) its database is part of readiness; in the fleet it is a dependency watched in the background.
 */
export function mediaService(media: Awaited<ReturnType<typeof openMedia>>, opts: { storageIsOwn?: boolean } = {}): GatewayService {
  return {
    name: 'media',
    routers: { public: media.service.router },
    start: () => media.service.start(),
    ready: opts.storageIsOwn ? media.ping : undefined,
    close: media.close,
  };
}
