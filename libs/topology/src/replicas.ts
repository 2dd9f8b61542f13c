/**
 * How a caller reaches a service that runs as several replicas. A service's address (BILLING_URL, TEXT_URL, ...,
 * EDGE_URL) is a comma-separated list of base URLs: in a cluster a list of one, the Kubernetes Service that balances
 * by itself; in the local fleet one URL per replica process. Calls go round-robin over the list. A replica that
 * refuses the connection (nothing listens: it died or is restarting) is left out for EJECT_MS and the call goes to
 * the next one: that request provably never reached it, so sending it elsewhere cannot run it twice. Any other failure
 * (the replica took the request, then died mid-call) is the caller's to handle as the failure model says
 * (docs/reliability.md): nothing is resent blindly.
 */

/** How long a replica that refused a connection is left out before it is tried again. */
export const EJECT_MS = 5_000;

/** How long a connection may take to open before the replica counts as refusing it (the request was not sent). */
export const CONNECT_TIMEOUT_MS = 3_000;

/**
 * The longest a caller of ours keeps an idle keep-alive connection to a service in its pool (the edge's proxy agent,
 * the undici pools of the billing and media clients). A draining process keeps every connection it has open for
 * longer than this (serve.ts, DRAIN_NOTICE_MS) before it closes the idle ones, so it never closes a connection a
 * caller may still pick to send a request on: that request would be lost unread, and the caller could not know it.
 */
export const POOLED_IDLE_MS = 1_000;

/**
 * POOLED_IDLE_MS as an undici pool's options: keepAliveTimeout when the server sends no hint, keepAliveMaxTimeout
 * over the `Keep-Alive: timeout=65` hint our servers send (sized for load balancers, serve.ts), which would keep 64 s.
 */
export const POOLED_IDLE = { keepAliveTimeout: POOLED_IDLE_MS, keepAliveMaxTimeout: POOLED_IDLE_MS } as const;

/** The base URLs of a service address: comma-separated, blanks dropped, each without its trailing slash. */
export function addressList(address: string): string[] {
  return address
    .split(',')
    .map((s) => s.trim().replace(/\/+$/, ''))
    .filter((s) => s.length > 0);
}

/**
 * Error codes that mean the connection was never established, so no byte of the request left this process: the
 * address refused it (ECONNREFUSED), or nothing answered in time to open it (undici's connect timeout, net's
 * ETIMEDOUT on connect). A reset or a close after the connection opened (ECONNRESET, "other side closed") is not here.
 */
const NEVER_SENT = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/** Whether `err` (or an error it wraps as its `cause`, as fetch does) says the request never reached the replica. */
export function neverReached(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NEVER_SENT.has(code)) return true;
    // AggregateError (happy eyeballs over several addresses): never sent when none of the attempts connected.
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.length > 0 && inner.every(neverReached)) return true;
  }
  return false;
}

export interface ReplicaSetOptions {
  ejectMs?: number;
  now?: () => number;
}

/** One service's replicas, as a caller sees them: which to call next, and which refused lately. */
export class ReplicaSet<T = string> {
  private cursor = 0;
  private readonly ejectedUntil: number[];
  private readonly ejectMs: number;
  private readonly now: () => number;

  /** Each target once: an address listed twice is one replica. */
  readonly targets: readonly T[];

  constructor(targets: readonly T[], opts: ReplicaSetOptions = {}) {
    if (targets.length === 0) throw new Error('a replica set needs at least one target');
    this.targets = [...new Set(targets)];
    this.ejectedUntil = this.targets.map(() => Number.NEGATIVE_INFINITY);
    this.ejectMs = opts.ejectMs ?? EJECT_MS;
    this.now = opts.now ?? Date.now;
  }

  /**
   * The next target in turn that is not ejected. When every one is, the one whose ejection ends first: a caller
   * always gets an answer from somewhere (a 503 from the transport when they are all down), never a refusal here.
   */
  next(): T {
    return this.targets[this.nextIndex()];
  }

  private nextIndex(): number {
    const n = this.targets.length;
    const now = this.now();
    for (let i = 0; i < n; i++) {
      const at = (this.cursor + i) % n;
      if (this.ejectedUntil[at] <= now) {
        this.cursor = (at + 1) % n;
        return at;
      }
    }
    let soonest = 0;
    for (let i = 1; i < n; i++) if (this.ejectedUntil[i] < this.ejectedUntil[soonest]) soonest = i;
    this.cursor = (soonest + 1) % n;
    return soonest;
  }

  /** Leaves `target` out of the turn for the ejection time. */
  eject(target: T): void {
    const at = this.targets.indexOf(target);
    if (at >= 0) this.ejectedUntil[at] = this.now() + this.ejectMs;
  }

  /** Whether `target` is in the turn now. */
  live(target: T): boolean {
    const at = this.targets.indexOf(target);
    return at >= 0 && this.ejectedUntil[at] <= this.now();
  }

  /**
   * Runs `call` on the next target; when it fails without having reached that target (neverReached), ejects it
   * and runs `call` on the next, each target at most once. Any other failure, or the last refusal, is thrown as is.
   */
  async call<R>(call: (target: T) => Promise<R>, reachedNothing: (err: unknown) => boolean = neverReached): Promise<R> {
    const tried = new Set<T>();
    for (;;) {
      let target = this.next();
      // The others may all be ejected (by this call or others): each one not yet tried still gets its chance.
      if (tried.has(target)) target = this.targets.find((t) => !tried.has(t)) as T;
      tried.add(target);
      try {
        return await call(target);
      } catch (e) {
        if (!reachedNothing(e)) throw e;
        this.eject(target);
        if (tried.size >= this.targets.length) throw e;
      }
    }
  }
}
