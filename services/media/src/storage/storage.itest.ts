import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { CreateBucketCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { filesystemStorage } from './filesystem';
import type { MediaStorage } from './port';
import { s3Storage } from './s3';

const BYTES = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
const BUCKET = 'media-test';
const PREFIX = 'gateway-a/';
/** s3rver's only account; it refuses other access keys (it does not check the signature itself). */
const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

interface Backend {
  storage: MediaStorage;
  close(): Promise<void>;
}

async function openFilesystem(): Promise<Backend & { dir: string }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-media-store-'));
  const dir = path.join(root, 'files');
  return { dir, storage: filesystemStorage(dir), close: async () => fs.rmSync(root, { recursive: true, force: true }) };
}

/** A local S3 (s3rver) on a random port over a temp directory, with the bucket created. */
async function openS3(): Promise<Backend & { endpoint: string; inspect: S3Client }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory: dir, silent: true });
  const address: AddressInfo = await server.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  const inspect = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: CREDENTIALS });
  await inspect.send(new CreateBucketCommand({ Bucket: BUCKET }));
  const storage = s3Storage({ bucket: BUCKET, prefix: PREFIX, endpoint, forcePathStyle: true, credentials: CREDENTIALS });
  return {
    endpoint,
    inspect,
    storage,
    close: async () => {
      storage.close();
      inspect.destroy();
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function chunksOf(stream: Readable): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return chunks;
}
const readAll = async (stream: Readable) => Buffer.concat(await chunksOf(stream));

let seq = 0;
const freshKey = () => `obj_${process.pid}_${++seq}`;

describe.each([
  ['filesystem', openFilesystem],
  ['S3', openS3],
] as const)('MediaStorage contract: %s adapter', (_name, open) => {
  let backend: Backend;
  let storage: MediaStorage;
  beforeAll(async () => {
    backend = await open();
    storage = backend.storage;
  });
  afterAll(() => backend.close());

  it('size is the byte length of what put stored', async () => {
    const key = freshKey();
    await storage.put(key, BYTES, 'image/png');
    expect(await storage.size(key)).toBe(BYTES.length);
  });

  it('reading from the first byte to the last returns exactly the stored bytes', async () => {
    const key = freshKey();
    await storage.put(key, BYTES, 'image/png');
    expect(await readAll(await storage.read(key, 0, BYTES.length - 1))).toEqual(BYTES);
  });

  it('a range includes both its ends: a middle range, and the last byte alone', async () => {
    const key = freshKey();
    await storage.put(key, BYTES, 'image/png');
    expect(await readAll(await storage.read(key, 10, 19))).toEqual(BYTES.subarray(10, 20));
    expect(await readAll(await storage.read(key, BYTES.length - 1, BYTES.length - 1))).toEqual(BYTES.subarray(BYTES.length - 1));
  });

  it('put under an existing key replaces its bytes', async () => {
    const key = freshKey();
    await storage.put(key, BYTES, 'image/png');
    await storage.put(key, BYTES.subarray(0, 7), 'image/png');
    expect(await storage.size(key)).toBe(7);
    expect(await readAll(await storage.read(key, 0, 6))).toEqual(BYTES.subarray(0, 7));
  });

  it('the size of a key never stored is undefined, not an error', async () => {
    expect(await storage.size(freshKey())).toBeUndefined();
  });

  it('after delete, the size of the key is undefined', async () => {
    const key = freshKey();
    await storage.put(key, BYTES, 'image/png');
    await storage.delete(key);
    expect(await storage.size(key)).toBeUndefined();
  });

  it('deleting a key never stored (or already deleted) succeeds', async () => {
    await expect(storage.delete(freshKey())).resolves.toBeUndefined();
  });

  it('a large object is streamed in several chunks, never buffered whole', async () => {
    const key = freshKey();
    const large = Buffer.alloc(5 * 1024 * 1024);
    for (let i = 0; i < large.length; i += 4) large.writeUInt32LE(i, i);
    await storage.put(key, large, 'video/mp4');
    const chunks = await chunksOf(await storage.read(key, 0, large.length - 1));
    expect(chunks.length).toBeGreaterThan(1);
    expect(Math.max(...chunks.map((c) => c.length))).toBeLessThan(large.length);
    expect(Buffer.concat(chunks).equals(large)).toBe(true);
  });

  it('a key that could climb out of its directory or prefix is refused by every operation', async () => {
    for (const key of ['../escape', '..', 'a/b', 'a\\b', '', 'x\0y']) {
      await expect(storage.put(key, BYTES, 'image/png')).rejects.toThrow(/bad storage key/);
      await expect(storage.size(key)).rejects.toThrow(/bad storage key/);
      await expect(storage.read(key, 0, 1)).rejects.toThrow(/bad storage key/);
      await expect(storage.delete(key)).rejects.toThrow(/bad storage key/);
    }
  });
});

describe('filesystem adapter', () => {
  let fsBackend: Awaited<ReturnType<typeof openFilesystem>>;
  beforeAll(async () => {
    fsBackend = await openFilesystem();
  });
  afterAll(() => fsBackend.close());

  it('writes nothing outside its directory for a key that tries to climb out', async () => {
    await expect(fsBackend.storage.put('../escape', BYTES, 'image/png')).rejects.toThrow(/bad storage key/);
    expect(fs.readdirSync(path.dirname(fsBackend.dir)).sort()).toEqual(['files']);
    expect(fs.readdirSync(fsBackend.dir)).toEqual([]);
  });
});

describe('S3 adapter', () => {
  let s3: Awaited<ReturnType<typeof openS3>>;
  beforeAll(async () => {
    s3 = await openS3();
  });
  afterAll(() => s3.close());

  it('stores an object under the prefix, with its content type', async () => {
    const key = freshKey();
    await s3.storage.put(key, BYTES, 'image/webp');
    const head = await s3.inspect.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}${key}` }));
    expect([head.ContentType, head.ContentLength]).toEqual(['image/webp', BYTES.length]);
  });

  it('adds the slash a prefix lacks, so keys never run into the prefix', async () => {
    const storage = s3Storage({ bucket: BUCKET, prefix: 'gateway-b', endpoint: s3.endpoint, forcePathStyle: true, credentials: CREDENTIALS });
    try {
      const key = freshKey();
      await storage.put(key, BYTES, 'image/png');
      const head = await s3.inspect.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `gateway-b/${key}` }));
      expect(head.ContentLength).toBe(BYTES.length);
    } finally {
      storage.close();
    }
  });

  it('size throws on an error other than not-found (an unknown access key, 403), rather than calling the object missing', async () => {
    const storage = s3Storage({
      bucket: BUCKET,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'UNKNOWN', secretAccessKey: 'S3RVER' },
    });
    try {
      await expect(storage.size(freshKey())).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    } finally {
      storage.close();
    }
  });
});
