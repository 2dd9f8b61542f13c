import { batched, batchedBy } from './batcher';

describe('batched', () => {
  it('groups calls that arrive while a batch runs, and answers each caller with its own result', async () => {
    const sizes: number[] = [];
    const many = async (items: number[]) => {
      sizes.push(items.length);
      await new Promise((r) => setTimeout(r, 5));
      return items.map((i) => i * 2);
    };
    const call = batched(many, async (i: number) => {
      sizes.push(1);
      return i * 2;
    });
    const out = await Promise.all(Array.from({ length: 20 }, (_, i) => call(i)));
    expect(out).toEqual(Array.from({ length: 20 }, (_, i) => i * 2));
    expect(sizes.length).toBeLessThan(20);
  });

  it('retries each call alone when a batch fails, so one bad call fails only itself', async () => {
    const call = batched(
      async () => {
        throw new Error('batch failed');
      },
      async (i: number) => {
        if (i === 3) throw new Error('bad 3');
        return i;
      },
    );
    const out = await Promise.allSettled([1, 2, 3, 4].map((i) => call(i)));
    expect(out.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  });

  it('splits more than 256 waiting calls into batches of at most 256, each caller answered with its own result', async () => {
    const sizes: number[] = [];
    const call = batched(
      async (items: number[]) => {
        sizes.push(items.length);
        return items.map((i) => i * 2);
      },
      async (i: number) => {
        sizes.push(1);
        return i * 2;
      },
    );
    const out = await Promise.all(Array.from({ length: 600 }, (_, i) => call(i)));
    expect(out).toEqual(Array.from({ length: 600 }, (_, i) => i * 2));
    expect(sizes).toEqual([256, 256, 88]);
  });
});

describe('batchedBy', () => {
  it("groups a key's calls into one batch, runs different keys side by side, and runs a call without a key alone", async () => {
    const batches: string[][] = [];
    let running = 0;
    let mostAtOnce = 0;
    const many = async (items: string[]) => {
      batches.push(items);
      mostAtOnce = Math.max(mostAtOnce, ++running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return items.map((i) => i.toUpperCase());
    };
    const call = batchedBy(
      (i: string) => (i.startsWith('-') ? undefined : i[0]),
      many,
      async (i: string) => {
        batches.push([i]);
        return i.toUpperCase();
      },
    );
    const items = ['a1', 'b1', 'a2', 'b2', 'a3', '-x', 'b3', '-y'];
    // A first call of each key starts its batcher; the rest arrive while that one runs and go together next.
    const out = await Promise.all(items.map((i) => call(i)));
    expect(out).toEqual(items.map((i) => i.toUpperCase()));
    for (const b of batches) expect(new Set(b.map((i) => (i.startsWith('-') ? i : i[0]))).size).toBe(1);
    expect(batches.filter((b) => b[0].startsWith('-'))).toEqual([['-x'], ['-y']]);
    expect(batches.flat().sort()).toEqual([...items].sort());
    expect(batches.length).toBeLessThan(items.length);
    expect(mostAtOnce).toBe(2);
  });
});
