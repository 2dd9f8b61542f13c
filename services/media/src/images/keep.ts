import { newRequestId } from '@gateway/service-kit';
import type { GeneratedImage } from '@gateway/upstreams';
import type { FileRef, FileRefs, NewFileRef } from '../files/refs';
import type { MediaStorage } from '../storage/port';

export interface KeepDeps {
  refs: FileRefs;
  storage: MediaStorage;
}

const TYPE_OF_EXTENSION: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  avif: 'image/avif',
};

/** The type an upstream's image URL announces by its extension; PNG, what image APIs answer by default, otherwise. */
export function imageTypeOfUrl(url: string): string {
  let pathname: string;
  try {
    pathname = new URL(url).pathname;
  } catch {
    return 'image/png';
  }
  const ext = /\.([a-z0-9]+)$/i.exec(pathname)?.[1].toLowerCase();
  return (ext && TYPE_OF_EXTENSION[ext]) || 'image/png';
}

/**
 * One /v1/files reference per generated image, in order: an upstream URL is kept as the reference's origin
 * (fetched when the file is asked for, never shown), inline bytes are stored first. When anything fails, the bytes
 * already stored are deleted, since no reference would ever lead the sweeper to them.
 */
export async function keepImages(deps: KeepDeps, owner: Pick<NewFileRef, 'accountId' | 'requestId'>, images: GeneratedImage[]): Promise<FileRef[]> {
  const stored: string[] = [];
  const placed = await Promise.allSettled(
    images.map(async (image): Promise<NewFileRef> => {
      if (image.kind === 'url') return { ...owner, source: 'origin', location: image.url, contentType: imageTypeOfUrl(image.url) };
      const key = newRequestId('img');
      stored.push(key);
      await deps.storage.put(key, image.bytes, image.contentType);
      return { ...owner, source: 'stored', location: key, contentType: image.contentType };
    }),
  );
  try {
    const failed = placed.find((p) => p.status === 'rejected');
    if (failed) throw failed.reason;
    return await deps.refs.create(placed.map((p) => (p as PromiseFulfilledResult<NewFileRef>).value));
  } catch (e) {
    await Promise.allSettled(stored.map((key) => deps.storage.delete(key)));
    throw e;
  }
}
