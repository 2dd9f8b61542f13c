import fs from 'node:fs';
import path from 'node:path';
import { checkKey, type MediaStorage } from './port';

/** Media bytes as files under one directory (embedded: GATEWAY_DATA_DIR/media-files). Keys are file names. */
export function filesystemStorage(dir: string): MediaStorage {
  fs.mkdirSync(dir, { recursive: true });
  const fileOf = (key: string) => path.join(dir, checkKey(key));
  return {
    async put(key, bytes) {
      // Written aside and renamed: a reader never sees half a file.
      const tmp = `${fileOf(key)}.partial`;
      await fs.promises.writeFile(tmp, bytes);
      await fs.promises.rename(tmp, fileOf(key));
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
