import { Router } from 'express';
import type { Logger } from '@gateway/service-kit';
import { mountFiles } from './files/handler';
import type { FileRefs } from './files/refs';
import type { MediaStorage } from './storage/port';

export { migrations } from './migrations';
export { FileRefs, type FileRef, type NewFileRef } from './files/refs';
export { filesystemStorage } from './storage/filesystem';
export type { MediaStorage } from './storage/port';

export interface MediaServiceDeps {
  refs: FileRefs;
  storage: MediaStorage;
  logger: Logger;
  /** How often stored bytes past their reference's expiry are deleted. */
  sweepIntervalMs?: number;
}

export interface MediaService {
  /** Keyed media routes under /v1. */
  router: Router;
  /** Deletes stored bytes past their reference's expiry (the timer of start() runs it; tests call it). */
  sweep(): Promise<void>;
  start(): void;
  stop(): void;
}

/** Media: generated files streamed through the gateway (images, speech and transcriptions build on it). */
export function createMediaService(deps: MediaServiceDeps): MediaService {
  const router = Router();
  mountFiles(router, deps);
  let sweeper: NodeJS.Timeout | undefined;
  const sweep = async () => {
    const expired = await deps.refs.expiredStored(500);
    for (const ref of expired) await deps.storage.delete(ref.location);
    await deps.refs.markPurged(expired.map((r) => r.id));
    if (expired.length) deps.logger.info({ deleted: expired.length }, 'deleted expired media');
  };
  return {
    router,
    sweep,
    start() {
      sweeper = setInterval(() => void sweep().catch((err) => deps.logger.error({ err }, 'media sweep failed')), deps.sweepIntervalMs ?? 60_000);
      sweeper.unref();
    },
    stop() {
      if (sweeper) clearInterval(sweeper);
    },
  };
}
