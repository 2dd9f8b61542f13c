import type { MediaStorage } from '../storage/port';
import type { FileRefs } from './refs';

/** Deletes stored bytes past their reference's expiry, a batch at a time; returns how many it deleted. */
export async function sweepExpiredMedia(refs: FileRefs, storage: MediaStorage, batch = 500): Promise<number> {
  const expired = await refs.expiredStored(batch);
  for (const ref of expired) await storage.delete(ref.location);
  await refs.markPurged(expired.map((r) => r.id));
  return expired.length;
}
