import fs from 'node:fs';
import path from 'node:path';
import { checkKey, type MediaStorage } from './port';

async function syncDirectory(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Media bytes as files under one directory (embedded: GATEWAY_DATA_DIR/media-files). Keys are file names. */
export function filesystemStorage(dir: string): MediaStorage {
  fs.mkdirSync(dir, { recursive: true });
  const fileOf = (key: string) => path.join(dir, checkKey(key));
  return {
    async put(key, bytes) {
      // Written aside and renamed: a reader never sees half a file. Synced before the rename and the directory after
      // it, so a file the gateway has referenced (and answered with) survives a power cut whole.
      const tmp = `${fileOf(key)}.partial`;
      const file = await fs.promises.open(tmp, 'w');
      try {
        await file.writeFile(bytes);
        await file.datasync();
      } finally {
        await file.close();
      }
      await fs.promises.rename(tmp, fileOf(key));
      await syncDirectory(dir);
    },
    async size(key) {
      try {
        return (await fs.promises.stat(fileOf(key))).size;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw e;
      }
    },
    async read(key, start, end) {
      return fs.createReadStream(fileOf(key), { start, end });
    },
    async delete(key) {
      await fs.promises.rm(fileOf(key), { force: true });
    },
  };
}
