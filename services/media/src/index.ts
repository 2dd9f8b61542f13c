import { Router } from 'express';
import { jsonBody } from '@gateway/service-kit';
import type { SpendDeps } from '@gateway/spend';
import { createProtocols } from '@gateway/upstreams';
import { guardedAgent } from '@gateway/upstreams';
import { mountFiles } from './files/handler';
import { mountInternalFiles } from './files/internal';
import { keepBytes } from './files/keep-bytes';
import type { FileRefs } from './files/refs';
import { sweepExpiredMedia } from './files/sweeper';
import { mountImages } from './images/handler';
import { mountSpeech } from './speech/handler';
import type { MediaStorage } from './storage/port';
import { mountTranscriptions } from './transcriptions/handler';

export { FileRefs, type FileRef, type NewFileRef } from './files/refs';
export { INTERNAL_FILES_PATH } from './files/internal';
export { migrations } from './migrations';
export { mediaService } from './gateway-service';
export { openMedia, s3OptionsOf, type MediaOptions } from './open';
export { filesystemStorage } from './storage/filesystem';
export { type S3Storage, type S3StorageOptions, s3Storage } from './storage/s3';
export type { MediaStorage } from './storage/port';

export interface MediaServiceDeps extends SpendDeps {
  refs: FileRefs;
  storage: MediaStorage;
  /** GATEWAY_PUBLIC_URL: generated files are answered as absolute URLs under it. */
  publicUrl: string;
  /** How often stored bytes past their reference's expiry are deleted. */
  sweepIntervalMs?: number;
}

export interface MediaService {
  /** Keyed media routes under /v1, and /internal/files for the fleet's other services. */
  router: Router;
  /** Stores bytes made elsewhere (a job's video) behind a new /v1/files reference; in-process callers use this. */
  keep(owner: { accountId: string; requestId: string }, bytes: Buffer, contentType: string): Promise<{ id: string; expiresAt: Date }>;
  start(): void;
  stop(): void;
}

/** Media routes, one folder each, on the shared money flow; generated files are streamed through /v1/files. */
export function createMediaService(deps: MediaServiceDeps, opts: { maxRequestBody: string; maxAudioBody: string }): MediaService {
  const router = Router();
  const protocols = createProtocols(deps);
  // Ahead of the JSON parser below: a recording in base64 needs the larger limit this route parses with.
  mountTranscriptions(router, { ...deps, protocolOf: protocols.transcription }, opts.maxAudioBody);
  // Also ahead of the JSON parser: it takes the raw bytes. A video may be far larger than any JSON request.
  mountInternalFiles(router, deps, '1gb');
  router.use(jsonBody(opts.maxRequestBody));
  // A file's origin is a URL an upstream answered: fetched only from a provider's own origin or a public address.
  const providerOrigins = deps.registry.all().flatMap((m) => m.endpoints.flatMap((e) => (e.provider.base_url ? [e.provider.base_url] : [])));
  mountFiles(router, { ...deps, originDispatcher: guardedAgent({ trustedOrigins: providerOrigins }) });
  mountImages(router, { ...deps, protocolOf: protocols.image });
  mountSpeech(router, { ...deps, protocolOf: protocols.speech });
  let sweeper: NodeJS.Timeout | undefined;
  const sweep = async () => {
    const deleted = await sweepExpiredMedia(deps.refs, deps.storage);
    if (deleted) deps.logger.info({ deleted }, 'deleted expired media');
  };
  return {
    router,
    keep: (owner, bytes, contentType) => keepBytes(deps, owner, bytes, contentType),
    start() {
      sweeper = setInterval(() => void sweep().catch((err) => deps.logger.error({ err }, 'media sweep failed')), deps.sweepIntervalMs ?? 60_000);
      sweeper.unref();
    },
    stop() {
      if (sweeper) clearInterval(sweeper);
    },
  };
}
