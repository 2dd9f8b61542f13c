import type { FileRefs, NewFileRef } from '../files/refs';
import type { MediaStorage } from '../storage/port';
import { imageTypeOfUrl, keepImages } from './keep';

describe('keeping generated images', () => {
  it.each([
    ['https://cdn.test/a/b.png?sig=1', 'image/png'],
    ['https://cdn.test/x.JPG', 'image/jpeg'],
    ['https://cdn.test/x.jpeg#frag', 'image/jpeg'],
    ['https://cdn.test/x.webp', 'image/webp'],
    ['https://cdn.test/x.gif', 'image/gif'],
    ['https://cdn.test/x', 'image/png'],
    ['https://cdn.test/x.bin', 'image/png'],
  ])('types %s as %s by its extension', (url, type) => {
    expect(imageTypeOfUrl(url)).toBe(type);
  });

  /** Storage in a Map, failing the put of any bytes equal to `failOn`. */
  function memoryStorage(failOn?: Buffer) {
    const objects = new Map<string, Buffer>();
    const storage = {
      put: async (key: string, bytes: Buffer) => {
        if (failOn?.equals(bytes)) throw new Error('disk full');
        objects.set(key, bytes);
      },
      delete: async (key: string) => void objects.delete(key),
    } as unknown as MediaStorage;
    return { storage, objects };
  }
  const created: NewFileRef[][] = [];
  const refs = {
    create: async (r: NewFileRef[]) => (created.push(r), r.map((x, i) => ({ ...x, id: `file_${i}`, expiresAt: new Date() }))),
  } as unknown as FileRefs;
  const owner = { accountId: 'acct_1', requestId: 'req_1' };

  it('references an upstream URL as the origin and stores inline bytes, in order', async () => {
    const { storage, objects } = memoryStorage();
    const bytes = Buffer.from('png-bytes');
    const kept = await keepImages({ refs, storage }, owner, [
      { kind: 'url', url: 'https://cdn.test/one.webp' },
      { kind: 'bytes', bytes, contentType: 'image/png' },
    ]);
    expect(kept.map((k) => [k.source, k.contentType])).toEqual([
      ['origin', 'image/webp'],
      ['stored', 'image/png'],
    ]);
    expect(kept[0].location).toBe('https://cdn.test/one.webp');
    expect(objects.get(kept[1].location)).toEqual(bytes);
    expect(kept.every((k) => k.accountId === 'acct_1' && k.requestId === 'req_1')).toBe(true);
  });

  it('deletes the bytes it stored when another image cannot be, and makes no reference', async () => {
    const bad = Buffer.from('bad');
    const { storage, objects } = memoryStorage(bad);
    const before = created.length;
    const kept = keepImages({ refs, storage }, owner, [
      { kind: 'bytes', bytes: Buffer.from('good'), contentType: 'image/png' },
      { kind: 'bytes', bytes: bad, contentType: 'image/png' },
    ]);
    await expect(kept).rejects.toThrow('disk full');
    expect(objects.size).toBe(0);
    expect(created.length).toBe(before);
  });
});
