import { newRequestId } from '@gateway/service-kit';
import type { MediaStorage } from '../storage/port';
import type { FileRef, FileRefs, NewFileRef } from './refs';

export interface KeepBytesDeps {
  refs: FileRefs;
  storage: MediaStorage;
}

/**
 * Stores bytes another service produced (a job's video) behind a new /v1/files reference of the account.
 * Should the reference fail to be written, the bytes are deleted: no reference would ever lead the sweeper to them.
 */
export async function keepBytes(
  deps: KeepBytesDeps,
  owner: Pick<NewFileRef, 'accountId' | 'requestId'>,
  bytes: Buffer,
  contentType: string,
): Promise<FileRef> {
  const key = newRequestId('blob');
  await deps.storage.put(key, bytes, contentType);
  try {
    const [ref] = await deps.refs.create([{ ...owner, source: 'stored', location: key, contentType }]);
    return ref;
  } catch (e) {
    await deps.storage.delete(key).catch(() => undefined);
    throw e;
  }
}
