import type { Readable } from 'node:stream';

/**
 * Where the gateway keeps media bytes an upstream sent inline (base64 images, say), until their reference
 * expires. The filesystem adapter serves the embedded gateway; the S3 adapter the fleet, where replicas share it.
 */
export interface MediaStorage {
  put(key: string, bytes: Buffer, contentType: string): Promise<void>;
  /** The object's size in bytes, or undefined when the key is unknown. */
  size(key: string): Promise<number | undefined>;
  /** Bytes `start` to `end`, both inclusive, streamed. */
  read(key: string, start: number, end: number): Promise<Readable>;
  delete(key: string): Promise<void>;
}
