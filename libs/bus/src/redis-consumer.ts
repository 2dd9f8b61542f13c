import type Redis from 'ioredis';
import type { BusEvent, Handler } from './port';
import { decodeEvent, encodeEvent } from './codec';
import { errorMessage, type BusErrorHandler } from './errors';
import { backoffMs, type EndableWait, endableWait, settleWithin, sleep } from './timing';
import { ParkedKeys, type HeldEntry, type ParkedKey } from './redis-parked';

export interface StreamConsumerConfig {
  cmd: Redis;
  streamKey(topic: string): string;
  deadLetterKey(topic: string): string;
  group: string;
  consumer: string;
  topics: string[];
  handler: Handler;
  maxLen: number;
  blockMs: number;
  batchSize: number;
  maxAttempts: number;
  retryBaseMs: number;
  maxDeliveries: number;
  claimIdleMs: number;
  /** After a read that was not full, wait this long before the next, so one read and one XACK carry many events. */
  readLingerMs: number;
  /** A new group starts at the stream's first entry (`0`) rather than its tail (`$`). */
  fromBeginning: boolean;
  closeTimeoutMs: number;
  onError: BusErrorHandler;
}

/** [id, [field, value, ...]]; fields are null for an entry trimmed away while it was pending (Redis < 7). */
type StreamEntry = [id: string, fields: string[] | null];

/** Pages of XAUTOCLAIM per claim pass, so a large backlog of orphans cannot starve new messages. */
const CLAIM_PAGES_PER_PASS = 10;

/**
 * One subscription's read loop. Reads, claims and retries happen one at a time in this loop; within one read, the
 * handler runs for different keys side by side and for each key's messages one at a time, in stream order. The next
 * read waits for every handler of the last one. A key's run stops at its first failed event: that event and every
 * later one of the key stay pending, parked, and are retried here with a capped backoff, in order.
 */
export class StreamConsumer {
  private readonly conn: Redis;
  private readonly keys: string[];
  private readonly topicOf = new Map<string, string>();
  private readonly claimEveryMs: number;
  private stopping = false;
  private blocked = false;
  private hungUp = false;
  private loop?: Promise<void>;
  private stopped?: Promise<void>;
  private lingering?: EndableWait;
  private readonly parked = new ParkedKeys();

  constructor(private readonly c: StreamConsumerConfig) {
    // Its own connection, never auto-pipelined: a blocking read must not hold up commands queued with it.
    this.conn = c.cmd.duplicate({ enableAutoPipelining: false });
    this.conn.on('error', () => {
      // Already reported through the command connection and the loop's own catch; avoids ioredis' unhandled-error print.
    });
    this.keys = c.topics.map((t) => c.streamKey(t));
    for (const [i, t] of c.topics.entries()) this.topicOf.set(this.keys[i], t);
    this.claimEveryMs = Math.max(50, Math.min(c.claimIdleMs / 2, 5_000));
  }

  /** Resolves once the groups exist: events published after `subscribe()` returns are this group's to read. */
  async start(): Promise<void> {
    try {
      await this.ensureGroups();
    } catch (err) {
      this.hangUp();
      throw err;
    }
    this.loop = this.run();
  }

  stop(): Promise<void> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<void> {
    this.stopping = true;
    this.lingering?.end();
    // A blocked read would otherwise hold close() for up to blockMs; dropping the socket ends it now. Anything
    // the server handed out in that instant stays pending and is claimed later: at-least-once still holds.
    if (this.blocked) this.hangUp();
    const finished = await settleWithin([this.loop ?? Promise.resolve()], this.c.closeTimeoutMs);
    this.hangUp();
    if (finished) await this.forgetConsumerIfIdle().catch(() => undefined);
  }

  /** Once only: a second ioredis disconnect() on a closed socket leaves a 2 s timer that holds the process open. */
  private hangUp(): void {
    if (this.hungUp) return;
    this.hungUp = true;
    this.conn.disconnect();
  }

  /** `fromStart`: a missing group starts at the stream's first entry rather than at its tail. */
  private async ensureGroups(fromStart = this.c.fromBeginning): Promise<void> {
    for (const key of this.keys) {
      try {
        // `$`: like a new Kafka group, a new group starts at the tail instead of replaying the retained stream,
        // unless its consumer asked for the history (`0`).
        await this.c.cmd.xgroup('CREATE', key, this.c.group, fromStart ? '0' : '$', 'MKSTREAM');
      } catch (err) {
        if (!errorMessage(err).includes('BUSYGROUP')) throw err;
      }
    }
  }

  private async run(): Promise<void> {
    let nextClaimAt = 0;
    let failures = 0;
    while (!this.stopping) {
      try {
        if (Date.now() >= nextClaimAt) {
          await this.claimPass();
          nextClaimAt = Date.now() + this.claimEveryMs;
        }
        await this.retryParked();
        if (this.stopping) break;
        // A parked key due for its retry must not wait out a whole block.
        const due = this.parked.nextDueAt();
        const blockMs = Math.max(1, Math.min(this.c.blockMs, this.claimEveryMs, due === undefined ? Infinity : due - Date.now()));
        this.blocked = true;
        const reply = (await this.conn.xreadgroup(
          'GROUP',
          this.c.group,
          this.c.consumer,
          'COUNT',
          this.c.batchSize,
          'BLOCK',
          blockMs,
          'STREAMS',
          ...this.keys,
          ...this.keys.map(() => '>'),
        )) as [key: string, entries: StreamEntry[]][] | null;
        this.blocked = false;
        let read = 0;
        for (const [key, entries] of reply ?? []) {
          read += entries.length;
          await this.handleEntries(key, entries, null);
        }
        failures = 0;
        // A read that returned a few events comes back at once for the next few, each time a write to Redis and an
        // XACK: under a steady stream of events that cost more than the handlers (the jobs service, which passes
        // over most of them, spent half its time on those writes). An empty read already waited in BLOCK.
        if (read > 0 && read < this.c.batchSize && this.c.readLingerMs > 0) await this.linger();
      } catch (err) {
        this.blocked = false;
        if (this.stopping) break;
        if (errorMessage(err).includes('NOGROUP')) {
          // The stream or group was deleted under us (FLUSHALL, manual cleanup, a Redis restarted without its data):
          // recreate it at the stream's start, not its tail. Whatever was published since (a settle sent the moment
          // Redis came back, before this read) was never delivered to this group; at the tail it would be skipped
          // for good. Replaying a stream that survived costs duplicates, which consumers tolerate.
          await this.ensureGroups(true).catch(() => undefined);
        } else {
          this.c.onError(err, { adapter: 'redis', action: 'none', group: this.c.group });
        }
        await sleep(backoffMs(++failures, 100, 5_000));
      }
    }
  }

  private linger(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    this.lingering = endableWait(this.c.readLingerMs, () => {
      this.lingering = undefined;
    });
    return this.lingering.done;
  }

  /** Takes over messages a dead (or stalled) consumer left unacknowledged too long. */
  private async claimPass(): Promise<void> {
    for (const key of this.keys) {
      await this.keepParked(key);
      let cursor = '0-0';
      for (let page = 0; page < CLAIM_PAGES_PER_PASS && !this.stopping; page++) {
        const [next, entries] = (await this.c.cmd.xautoclaim(
          key,
          this.c.group,
          this.c.consumer,
          this.c.claimIdleMs,
          cursor,
          'COUNT',
          this.c.batchSize,
        )) as [string, StreamEntry[], string[]?];
        if (entries.length) await this.handleEntries(key, entries, await this.deliveryCounts(key, entries));
        cursor = next;
        if (cursor === '0-0') break;
      }
    }
  }

  /**
   * Resets the idle time of the parked entries (XCLAIM JUSTID, which counts no delivery), so that no other consumer's
   * claim pass takes them while this one is alive and retrying them; those no longer pending are forgotten.
   */
  private async keepParked(key: string): Promise<void> {
    const ids = this.parked.idsOf(key);
    if (ids.length === 0) return;
    const owned = (await this.c.cmd.xclaim(key, this.c.group, this.c.consumer, 0, ...ids, 'JUSTID')) as string[];
    this.parked.keepOnly(key, new Set(owned));
  }

  /** An id missing from the answer counts as a first delivery: dead-lettering it then waits one more round, no harm. */
  private async deliveryCounts(key: string, entries: StreamEntry[]): Promise<Map<string, number>> {
    const rows = (await this.c.cmd.xpending(
      key,
      this.c.group,
      entries[0][0],
      entries[entries.length - 1][0],
      entries.length + this.c.batchSize,
      this.c.consumer,
    )) as [id: string, consumer: string, idleMs: number, deliveries: number][];
    return new Map(rows.map(([id, , , deliveries]) => [id, Number(deliveries)]));
  }

  private async handleEntries(key: string, entries: StreamEntry[], deliveries: Map<string, number> | null): Promise<void> {
    const topic = this.topicOf.get(key);
    // Every key read or claimed comes from this.keys; anything else is a bug, and its entries stay pending.
    if (topic === undefined) throw new Error(`bus: stream ${key} is not one of this subscription's topics`);
    const acks: Promise<unknown>[] = [];
    const byKey = new Map<string, HeldEntry[]>();
    for (const [id, fields] of entries) {
      // Whatever is not handled yet stays pending and is claimed elsewhere after claimIdleMs.
      if (this.stopping) break;
      const raw = fields ? field(fields, 'e') : undefined;
      if (raw === undefined) {
        acks.push(this.ack(key, id));
        continue;
      }
      let event: BusEvent;
      try {
        event = decodeEvent(raw);
      } catch (err) {
        acks.push(this.deadLetter(topic, key, id, raw, err, undefined));
        continue;
      }
      const delivered = deliveries?.get(id) ?? 1;
      if (delivered > this.c.maxDeliveries) {
        acks.push(this.deadLetter(topic, key, id, raw, new Error(`gave up after ${delivered - 1} deliveries`), event));
        continue;
      }
      // Behind a failed event of its key: it waits, pending, for that one to be handled first.
      if (this.parked.has(key, event.key)) {
        this.parked.hold(key, topic, event.key, [{ id, event }], Date.now());
        continue;
      }
      const run = byKey.get(event.key);
      if (run) run.push({ id, event });
      else byKey.set(event.key, [{ id, event }]);
    }
    // The contract orders events per key only: the keys of one read run side by side, each key's events in order.
    // One at a time, a consumer whose handler waits on a database (billing's settles) handled one event per commit.
    const handled: string[] = [];
    await Promise.all(
      [...byKey.entries()].map(async ([eventKey, run]) => {
        for (const [i, { id, event }] of run.entries()) {
          if (this.stopping) break;
          if (await this.invoke(event, topic)) {
            handled.push(id);
            continue;
          }
          this.parked.hold(key, topic, eventKey, run.slice(i), Date.now() + this.retryDelay(1)).failures = 1;
          break;
        }
      }),
    );
    // One XACK for the whole read rather than one per entry.
    if (handled.length > 0) acks.push(this.ack(key, ...handled));
    // Acks are pipelined, not awaited one by one: a lost ack only means a duplicate, which consumers tolerate.
    for (const r of await Promise.allSettled(acks)) {
      if (r.status === 'rejected' && !this.stopping) this.c.onError(r.reason, { adapter: 'redis', action: 'none', topic, group: this.c.group });
    }
  }

  /**
   * The parked keys that are due, side by side, each from its failed event on, in order. A head that fails for the
   * maxDeliveries-th round goes to the dead-letter stream and the key's next event is tried.
   */
  private async retryParked(): Promise<void> {
    const due = this.parked.due(Date.now());
    if (due.length === 0) return;
    const handled = new Map<string, string[]>();
    await Promise.all(due.map((p) => this.retryKey(p, handled)));
    const acks = [...handled].map(([key, ids]) => this.ack(key, ...ids));
    for (const r of await Promise.allSettled(acks)) {
      if (r.status === 'rejected' && !this.stopping) this.c.onError(r.reason, { adapter: 'redis', action: 'none', group: this.c.group });
    }
  }

  private async retryKey(p: ParkedKey, handled: Map<string, string[]>): Promise<void> {
    while (p.entries.length > 0 && !this.stopping) {
      const head = p.entries[0];
      if (await this.invoke(head.event, p.topic)) {
        handled.set(p.stream, [...(handled.get(p.stream) ?? []), head.id]);
      } else if (++p.failures >= this.c.maxDeliveries) {
        const error = new Error(`gave up after ${p.failures} deliveries`);
        await this.deadLetter(p.topic, p.stream, head.id, encodeEvent(head.event), error, head.event);
      } else {
        p.dueAt = Date.now() + this.retryDelay(p.failures);
        return;
      }
      p.entries.shift();
      p.failures = 0;
    }
    this.parked.release(p);
  }

  /** Between rounds of a parked key: doubling from retryBaseMs, at most claimIdleMs, as the claim loop waited before. */
  private retryDelay(failures: number): number {
    return backoffMs(failures, this.c.retryBaseMs, Math.max(this.c.retryBaseMs, this.c.claimIdleMs));
  }

  /** In-place retries keep a transient failure from costing a parked round. */
  private async invoke(event: BusEvent, topic: string): Promise<boolean> {
    let lastError: unknown;
    for (let attempt = 1; attempt <= this.c.maxAttempts; attempt++) {
      try {
        await this.c.handler(event, topic);
        return true;
      } catch (err) {
        lastError = err;
        if (this.stopping || attempt === this.c.maxAttempts) break;
        await sleep(backoffMs(attempt, this.c.retryBaseMs));
      }
    }
    this.c.onError(lastError, { adapter: 'redis', action: 'will-retry', topic, group: this.c.group, event });
    return false;
  }

  private ack(key: string, ...ids: string[]): Promise<unknown> {
    return this.c.cmd.xack(key, this.c.group, ...ids);
  }

  private async deadLetter(topic: string, key: string, id: string, raw: string, err: unknown, event: BusEvent | undefined): Promise<void> {
    await this.c.cmd.xadd(
      this.c.deadLetterKey(topic),
      'MAXLEN',
      '~',
      this.c.maxLen,
      '*',
      'e',
      raw,
      'id',
      id,
      'group',
      this.c.group,
      'error',
      errorMessage(err),
    );
    this.c.onError(err, { adapter: 'redis', action: 'dead-lettered', topic, group: this.c.group, event });
    await this.ack(key, id);
  }

  /** Random consumer names would otherwise pile up in XINFO CONSUMERS; one still owning messages is left to be claimed from. */
  private async forgetConsumerIfIdle(): Promise<void> {
    for (const key of this.keys) {
      const pending = (await this.c.cmd.xpending(key, this.c.group, '-', '+', 1, this.c.consumer)) as unknown[];
      if (pending.length === 0) await this.c.cmd.xgroup('DELCONSUMER', key, this.c.group, this.c.consumer);
    }
  }
}

function field(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}
