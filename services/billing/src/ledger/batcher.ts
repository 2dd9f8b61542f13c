/**
 * Group commit for a single-connection database (PGlite): calls that arrive while one statement runs are sent
 * together as the next statement, one transaction for all of them, so the per-statement cost (which dominates in
 * PGlite) is shared. PGlite runs its WebAssembly synchronously, blocking the event loop: a batch therefore starts
 * on setImmediate, after the loop has read every request already waiting on its sockets, never on a timer.
 * If a batch fails as a whole, each of its calls is retried alone so every caller gets its own answer.
 */
export function batched<I, O>(runMany: (items: I[]) => Promise<O[]>, runOne: (item: I) => Promise<O>, maxBatch = 256): (item: I) => Promise<O> {
  type Waiter = { item: I; resolve: (o: O) => void; reject: (e: unknown) => void };
  let queue: Waiter[] = [];
  let running = false;

  async function pump(): Promise<void> {
    while (queue.length > 0) {
      await new Promise<void>((r) => setImmediate(r));
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      if (batch.length === 1) {
        await runOne(batch[0].item).then(batch[0].resolve, batch[0].reject);
        continue;
      }
      try {
        const out = await runMany(batch.map((w) => w.item));
        for (const [i, w] of batch.entries()) w.resolve(out[i]);
      } catch {
        for (const w of batch) await runOne(w.item).then(w.resolve, w.reject);
      }
    }
    running = false;
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!running) {
        running = true;
        void pump();
      }
    });
}
