import { Readable } from 'node:stream';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { checkKey, type MediaStorage } from './port';

// Required when an S3 storage opens, not at start: the SDK is about 10 MiB of RSS that a media process on local
// storage (the local fleet's) would hold for nothing.
const s3Sdk = (): typeof S3Sdk => require('@aws-sdk/client-s3');

export interface S3StorageOptions {
  /** MEDIA_S3_BUCKET. */
  bucket: string;
  /** Keys go under it, so one bucket can serve several gateways; a missing trailing slash is added. */
  prefix?: string;
  /** MEDIA_S3_ENDPOINT: an S3-compatible store (MinIO, R2, Ceph...); unset for AWS itself. */
  endpoint?: string;
  /** MEDIA_S3_REGION; unset: the SDK's chain (AWS_REGION, the profile), or us-east-1 beside an endpoint. */
  region?: string;
  /** MEDIA_S3_FORCE_PATH_STYLE: bucket in the path, not the host name (most S3-compatible stores want it). */
  forcePathStyle?: boolean;
  /** Unset: the SDK's standard chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, web identity, instance role). */
  credentials?: S3ClientConfig['credentials'];
}

export type S3Storage = MediaStorage & {
  /** Frees the client's pooled sockets; the storage is unusable after. */
  close(): void;
};

/** Media bytes as objects of one S3 bucket: the fleet's storage, shared by every media replica. */
export function s3Storage(opts: S3StorageOptions): S3Storage {
  const { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } = s3Sdk();
  const client = new S3Client({
    endpoint: opts.endpoint,
    // S3-compatible stores ignore the region but the SDK refuses to sign without one.
    region: opts.region ?? (opts.endpoint ? 'us-east-1' : undefined),
    forcePathStyle: opts.forcePathStyle,
    credentials: opts.credentials,
    // The SDK's default checksums (CRC32 headers and trailers) are refused by many S3-compatible stores;
    // AWS itself keeps them.
    ...(opts.endpoint ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } : {}),
  });
  const Bucket = opts.bucket;
  const prefix = opts.prefix ? opts.prefix.replace(/\/*$/, '/') : '';
  const keyOf = (key: string) => prefix + checkKey(key);
  return {
    async put(key, bytes, contentType) {
      await client.send(new PutObjectCommand({ Bucket, Key: keyOf(key), Body: bytes, ContentType: contentType, ContentLength: bytes.length }));
    },
    async size(key) {
      try {
        return (await client.send(new HeadObjectCommand({ Bucket, Key: keyOf(key) }))).ContentLength ?? 0;
      } catch (e) {
        // A HEAD answer has no body, so the status is all there is to tell a missing key by.
        if (isNotFound(e)) return undefined;
        throw e;
      }
    },
    async read(key, start, end) {
      const out = await client.send(new GetObjectCommand({ Bucket, Key: keyOf(key), Range: `bytes=${start}-${end}` }));
      // In Node the body is the HTTP response itself: handed on unread, so the bytes stream rather than buffer.
      if (!(out.Body instanceof Readable)) throw new Error(`S3 answered ${keyOf(key)} without a readable body`);
      return out.Body;
    },
    async delete(key) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket, Key: keyOf(key) }));
      } catch (e) {
        // S3 answers 204 for a missing key; some compatible stores answer 404, which means the same here.
        if (!isNotFound(e)) throw e;
      }
    },
    close() {
      client.destroy();
    },
  };
}

const isNotFound = (e: unknown) => e instanceof s3Sdk().S3ServiceException && e.$metadata.httpStatusCode === 404;
