import type { BusEvent, EventBus, Handler, Subscription } from './port';
import { assertEvent } from './codec';
import { backoffMs, settleWithin, sleep } from './timing';
import { guarded, logBusError, type BusErrorHandler } from './errors';

export interface MemoryBusOptions {
  /**
   * Deliveries of one event (first one included) before it is reported and dropped. Default: no limit, the event is
   * retried until handled. Dropping a hold close after a 150 ms storage blip let its hold expire uncharged.
   */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt. Default 10 ms. */
  retryBaseMs?: number;
  /** Longest wait between two retries of one event. Default 5000 ms. */
  retryCapMs?: number;
  /**
   * The groups this process's consumers will form, and their topics, as a broker's groups outlive their members:
   * events published before a declared group's first subscribe wait for it (a close published while billing
   * starts). An undeclared group starts at its first subscribe, as a new group starts at the tail on Redis and Kafka.
   */
  groups?: Record<string, readonly string[]>;
  /** How long `Subscription.close()` lets in-flight handlers finish before their events go to another member. Default 5000 ms. */
  closeTimeoutMs?: number;
  /** Undelivered events one group may hold before publishes are refused, so a stuck group cannot eat the heap. Default 100000. */
  maxBacklog?: number;
  onError?: BusErrorHandler;
}

interface Entry {
  event: BusEvent;
  attempts: number;
}

/** The events of one key on one topic for one group: drained by at most one loop, so they run in order. */
interface KeyQueue {
  topic: string;
  key: string;
  /** Picks the member; cached because the queue lives only while it has events. */
  hash: number;
  items: (Entry | undefined)[];
  head: number;
  running: boolean;
}

interface Member {
  handler: Handler;
  inflight: Set<Promise<unknown>>;
  /**
   * One per delivery in flight: called when the member is gone for good, so that delivery goes to someone else.
   * Not a race against one long-lived "gone" promise: every Promise.race leaves a reaction on a promise that never
   * settles, one per event for the life of the member (a leak of 0.7 KB a request, found by the soak).
   */
  abandoners: Set<() => void>;
  left: boolean;
}

interface Group {
  name: string;
  byTopic: Map<string, Member[]>;
  queues: Map<string, Map<string, KeyQueue>>;
  /** Queues whose topic has no member right now; the next subscriber to that topic restarts them. */
  parked: Set<KeyQueue>;
  backlog: number;
}

const OK = Symbol('ok');
const ABANDONED = Symbol('abandoned');
type Outcome = typeof OK | typeof ABANDONED | { error: unknown };

/**
 * In-process bus for embedded mode and unit tests. Groups are durable for the life of the bus, like Kafka/Redis
 * groups: events published while a group has no member wait for the next one. Delivery never happens inside
 * `publish` (always after setImmediate), so a publisher's transaction never runs consumer code.
 */
export function createMemoryBus(opts: MemoryBusOptions = {}): EventBus {
  const maxAttempts = Math.max(1, opts.maxAttempts ?? Infinity);
  const retryBaseMs = opts.retryBaseMs ?? 10;
  const retryCapMs = Math.max(retryBaseMs, opts.retryCapMs ?? 5_000);
  const closeTimeoutMs = opts.closeTimeoutMs ?? 5_000;
  const maxBacklog = opts.maxBacklog ?? 100_000;
  const onError = guarded(opts.onError ?? logBusError);

  const groups = new Map<string, Group>();
  const groupsByTopic = new Map<string, Group[]>();
  let closed = false;

  function enqueue(group: Group, topic: string, event: BusEvent): void {
    let byKey = group.queues.get(topic);
    if (!byKey) {
      byKey = new Map();
      group.queues.set(topic, byKey);
    }
    let q = byKey.get(event.key);
    if (!q) {
      q = { topic, key: event.key, hash: fnv1a(event.key), items: [], head: 0, running: false };
      byKey.set(event.key, q);
    }
    q.items.push({ event, attempts: 0 });
    group.backlog++;
    start(group, q);
  }

  function start(group: Group, q: KeyQueue): void {
    if (q.running) return;
    q.running = true;
    setImmediate(drain, group, q);
  }

  function advance(group: Group, q: KeyQueue): void {
    q.items[q.head++] = undefined;
    group.backlog--;
    if (q.head === q.items.length) {
      q.items = [];
      q.head = 0;
    } else if (q.head > 1024 && q.head * 2 > q.items.length) {
      q.items = q.items.slice(q.head);
      q.head = 0;
    }
  }

  async function drain(group: Group, q: KeyQueue): Promise<void> {
    try {
      while (!closed) {
        // Slots before head are cleared and every slot from head on holds an entry, so undefined means drained.
        const entry = q.items[q.head];
        if (entry === undefined) break;
        const members = group.byTopic.get(q.topic);
        if (!members || members.length === 0) {
          group.parked.add(q);
          return;
        }
        const outcome = await deliver(members[q.hash % members.length], entry.event, q.topic);
        if (outcome === ABANDONED) continue;
        if (outcome === OK) {
          advance(group, q);
          continue;
        }
        entry.attempts++;
        const about = { adapter: 'memory', topic: q.topic, group: group.name, event: entry.event } as const;
        if (entry.attempts >= maxAttempts) {
          onError(outcome.error, { ...about, action: 'dropped' });
          advance(group, q);
        } else {
          // Every failure counts in the metric; the log hears of the 1st, 2nd, 4th, 8th...: an outage of minutes
          // must not write a line per event every few seconds.
          onError(outcome.error, { ...about, action: 'will-retry', quiet: !isPowerOfTwo(entry.attempts) });
          await sleep(backoffMs(entry.attempts, retryBaseMs, retryCapMs));
        }
      }
    } finally {
      q.running = false;
      // Deleting only empty queues keeps the per-key maps as small as the set of keys with traffic in flight.
      const byKey = group.queues.get(q.topic);
      if (q.head === q.items.length && byKey?.get(q.key) === q) byKey.delete(q.key);
    }
  }

  async function deliver(member: Member, event: BusEvent, topic: string): Promise<Outcome> {
    let run: Promise<Outcome>;
    try {
      run = Promise.resolve(member.handler(event, topic)).then(
        () => OK,
        (error: unknown) => ({ error }),
      );
    } catch (error) {
      return { error };
    }
    member.inflight.add(run);
    let abandon!: () => void;
    try {
      return await new Promise<Outcome>((resolve) => {
        abandon = () => resolve(ABANDONED);
        if (member.left) return abandon();
        member.abandoners.add(abandon);
        run.then(resolve);
      });
    } finally {
      member.inflight.delete(run);
      member.abandoners.delete(abandon);
    }
  }

  function groupNamed(name: string): Group {
    let group = groups.get(name);
    if (!group) {
      group = { name, byTopic: new Map(), queues: new Map(), parked: new Set(), backlog: 0 };
      groups.set(name, group);
    }
    return group;
  }

  /** From here on the group's events are kept for it, member or not. */
  function follow(group: Group, topic: string): void {
    const onTopic = groupsByTopic.get(topic) ?? [];
    if (!onTopic.includes(group)) groupsByTopic.set(topic, [...onTopic, group]);
  }

  function join(group: Group, topics: string[], handler: Handler): Member {
    const member: Member = { handler, inflight: new Set(), abandoners: new Set(), left: false };
    for (const topic of new Set(topics)) {
      const members = group.byTopic.get(topic) ?? [];
      members.push(member);
      group.byTopic.set(topic, members);
      follow(group, topic);
    }
    for (const q of group.parked) {
      if (group.byTopic.get(q.topic)?.length) {
        group.parked.delete(q);
        start(group, q);
      }
    }
    return member;
  }

  function leave(member: Member): void {
    member.left = true;
    for (const abandon of member.abandoners) abandon();
    member.abandoners.clear();
  }

  async function part(group: Group, member: Member): Promise<void> {
    for (const [topic, members] of group.byTopic) {
      const rest = members.filter((m) => m !== member);
      if (rest.length) group.byTopic.set(topic, rest);
      else group.byTopic.delete(topic);
    }
    if (member.inflight.size) await settleWithin([...member.inflight], closeTimeoutMs);
    leave(member);
  }

  for (const [name, topics] of Object.entries(opts.groups ?? {})) for (const topic of topics) follow(groupNamed(name), topic);

  return {
    kind: 'memory',

    async publish(topic, event) {
      assertEvent(topic, event);
      if (closed) throw new Error('bus: publish on a closed memory bus');
      const targets = groupsByTopic.get(topic);
      if (!targets) return;
      // All groups or none: a publisher told of the refusal can try again without doubling the event for the others.
      const full = targets.find((g) => g.backlog >= maxBacklog);
      if (full) {
        const err = new Error(`bus: group ${full.name} holds ${maxBacklog} undelivered events, its cap: publish refused`);
        onError(err, { adapter: 'memory', action: 'refused', topic, group: full.name, event });
        throw err;
      }
      for (const group of targets) enqueue(group, topic, event);
    },

    async subscribe(groupName, topics, handler): Promise<Subscription> {
      if (closed) throw new Error('bus: subscribe on a closed memory bus');
      if (topics.length === 0) throw new Error('bus: subscribe needs at least one topic');
      const group = groupNamed(groupName);
      if (opts.groups) {
        // A table that misses a consumer would silently cost it what is published before it starts.
        const undeclared = topics.filter((t) => !opts.groups?.[groupName]?.includes(t));
        if (undeclared.length) {
          const err = new Error(
            `group ${groupName} subscribes to ${undeclared.join(', ')} undeclared: what was published there before now is not kept for it`,
          );
          onError(err, { adapter: 'memory', action: 'none', group: groupName });
        }
      }
      const member = join(group, topics, handler);
      let closing: Promise<void> | undefined;
      return { close: () => (closing ??= part(group, member)) };
    },

    async ping() {
      if (closed) throw new Error('bus: memory bus is closed');
    },

    // A member runs in this process's event loop: it cannot stop while the process runs.
    checkConsumers() {},

    async close() {
      if (closed) return;
      // Graceful: what is queued for a group that still has members is delivered first (within closeTimeoutMs),
      // so a shutting-down embedded gateway settles the holds of the requests it just answered.
      // Ref'd, unlike the retry sleeps: with only those left, the process would exit with close() still pending.
      const deadline = Date.now() + closeTimeoutMs;
      while (Date.now() < deadline && [...groups.values()].some((g) => g.backlog > 0 && g.byTopic.size > 0))
        await new Promise((r) => setTimeout(r, 5));
      closed = true;
      const members = new Set<Member>();
      for (const group of groups.values()) for (const list of group.byTopic.values()) for (const m of list) members.add(m);
      for (const m of members) leave(m);
      groups.clear();
      groupsByTopic.clear();
    },
  };
}

function isPowerOfTwo(n: number): boolean {
  return (n & (n - 1)) === 0;
}

/** FNV-1a: cheap and well spread, so accounts divide evenly over a group's members. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
