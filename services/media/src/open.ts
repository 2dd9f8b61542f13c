import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type GatewayConfig, type GatewayEnv, parseDuration } from '@gateway/config';
import { type Db, openServiceDb } from '@gateway/db';
import type { SpendDeps } from '@gateway/spend';
import { FileRefs } from './files/refs';
import { createMediaService, type MediaService } from './service';
import { migrations } from './migrations';
import { filesystemStorage } from './storage/filesystem';
import { s3Storage } from './storage/s3';
import type { MediaStorage } from './storage/port';

/** MEDIA_S3_*: a bucket shared by every media replica; absent, the filesystem. */
export interface MediaS3Options {
  bucket: string;
  prefix?: string;
  region?: string;
  endpoint?: string;
  forcePathStyle?: boolean;
}

export interface MediaOptions {
  /** PostgreSQL for the media schema (fleet); absent, PGlite under dataDir (embedded) or in memory. */
  databaseUrl?: string;
  /** Where the embedded database and stored media live; absent (tests), a temporary directory for the bytes. */
  dataDir?: string;
  /** Already open (the embedded gateway opens every service's database at once); its migrations are this service's. */
  db?: Db;
  publicUrl: string;
  s3?: MediaS3Options;
}

/** The media service with its database and storage, as the embedded gateway and the fleet process both open it. */
export async function openMedia(
  config: GatewayConfig,
  spend: SpendDeps,
  opts: MediaOptions,
): Promise<{ service: MediaService; ping(): Promise<void>; close(): Promise<void> }> {
  const db = opts.db ?? (await openServiceDb('media', migrations, { databaseUrl: opts.databaseUrl, dataDir: opts.dataDir }));
  const s3 = opts.s3 ? s3Storage(opts.s3) : undefined;
  const storage: MediaStorage =
    s3 ?? filesystemStorage(opts.dataDir ? path.join(opts.dataDir, 'media-files') : fs.mkdtempSync(path.join(os.tmpdir(), 'gw-media-files-')));
  const refs = new FileRefs(db, parseDuration(config.media.file_ttl));
  const service = createMediaService(
    { ...spend, refs, storage, publicUrl: opts.publicUrl },
    { maxRequestBody: config.limits.max_request_body, maxAudioBody: config.limits.max_audio_body },
  );
  return {
    service,
    ping: () => db.ping(),
    async close() {
      service.stop();
      s3?.close();
      await db.close();
    },
  };
}

/** The S3 options of the environment, when a bucket is named. */
export function s3OptionsOf(env: GatewayEnv): MediaS3Options | undefined {
  if (!env.MEDIA_S3_BUCKET) return undefined;
  return {
    bucket: env.MEDIA_S3_BUCKET,
    prefix: env.MEDIA_S3_PREFIX,
    region: env.MEDIA_S3_REGION,
    endpoint: env.MEDIA_S3_ENDPOINT,
    forcePathStyle: env.MEDIA_S3_FORCE_PATH_STYLE === 'true',
  };
}
