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

/**
 * One batcher per key (PostgreSQL, a pool of connections): the calls of one key share a statement, so its rows are
 * locked once per batch rather than once per call, while different keys still run side by side on the pool. A call
 * without a key runs alone. A key's batcher is dropped once it has nothing in flight.
 */
export function batchedBy<I, O>(
  keyOf: (item: I) => string | undefined,
  runMany: (items: I[]) => Promise<O[]>,
  runOne: (item: I) => Promise<O>,
  maxBatch = 256,
): (item: I) => Promise<O> {
  const byKey = new Map<string, { call: (item: I) => Promise<O>; inFlight: number }>();
  return async (item) => {
    const key = keyOf(item);
    if (key === undefined) return runOne(item);
    let b = byKey.get(key);
    if (!b) {
      b = { call: batched(runMany, runOne, maxBatch), inFlight: 0 };
      byKey.set(key, b);
    }
    b.inFlight++;
    try {
      return await b.call(item);
    } finally {
      if (--b.inFlight === 0 && byKey.get(key) === b) byKey.delete(key);
    }
  };
}
