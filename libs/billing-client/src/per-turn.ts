/**
 * Calls made during one turn of the event loop leave together: the first call of a turn schedules a flush on
 * setImmediate, which runs once the loop has handled every socket event already waiting, so under load the
 * requests read in that turn share one round trip, and a lone call (one connection, a quiet service) leaves alone
 * through `one`, exactly as it would without this, a turn later at most. Each caller gets its own outcome.
 */
export function perTurn<I, O>(
  one: (item: I) => Promise<O>,
  /** One outcome per item, in order; an Error is that item's rejection. Rejecting rejects the whole group. */
  many: (items: I[]) => Promise<(O | Error)[]>,
  maxPerCall: number,
): (item: I) => Promise<O> {
  type Waiter = { item: I; resolve: (o: O) => void; reject: (e: unknown) => void };
  let queue: Waiter[] = [];

  function flush(): void {
    const turn = queue;
    queue = [];
    for (let i = 0; i < turn.length; i += maxPerCall) {
      const group = turn.slice(i, i + maxPerCall);
      if (group.length === 1) {
        one(group[0].item).then(group[0].resolve, group[0].reject);
        continue;
      }
      many(group.map((w) => w.item)).then(
        (outcomes) => {
          for (const [j, w] of group.entries()) {
            const o = outcomes[j];
            if (o instanceof Error) w.reject(o);
            else w.resolve(o);
          }
        },
        (err) => {
          for (const w of group) w.reject(err);
        },
      );
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({ item, resolve, reject });
    });
}
