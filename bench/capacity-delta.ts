/**
 * The arithmetic of `pnpm bench capacity` (bench/capacity.ts), kept apart from its I/O so it is tested on its own
 * (capacity-delta.test.ts): counters read before and after a fixed number of requests, their differences
 * per request, and the parsers of what PostgreSQL and Redis answer.
 */

/** Monotonic counters by name ("cpu ms edge", "pg xact_commit", "redis xadd" ...). */
export type Counters = Record<string, number>;

/**
 * after - before, name by name. A counter first seen after (a Redis command first called during the run) started at
 * 0; one that went backwards (a process restarted, a statistics reset) is reported as NaN rather than as a negative
 * cost, so a broken run cannot pass for a cheap one.
 */
export function diff(before: Counters, after: Counters): Counters {
  const out: Counters = {};
  for (const [name, v] of Object.entries(after)) {
    const d = v - (before[name] ?? 0);
    out[name] = d < 0 ? Number.NaN : d;
  }
  return out;
}

export function perRequest(delta: Counters, requests: number): Counters {
  if (!(requests > 0)) throw new Error(`per request over ${requests} requests`);
  return Object.fromEntries(Object.entries(delta).map(([k, v]) => [k, v / requests]));
}

/** `INFO commandstats` → calls by command ("cmdstat_xadd:calls=12,usec=..." → { xadd: 12 }). */
export function parseCommandstats(info: string): Counters {
  const out: Counters = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}

/** One `INFO` field ("total_net_input_bytes:1234"), 0 when absent. */
export function infoField(info: string, field: string): number {
  const m = new RegExp(`^${field}:(\\d+)`, 'm').exec(info);
  return m ? Number(m[1]) : 0;
}

/** `psql -At -F '|'` rows of "name|n1|n2..." → counters named "<prefix><name> <column>". */
export function parseRows(text: string, prefix: string, columns: string[]): Counters {
  const out: Counters = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const [name, ...values] = line.split('|');
    if (values.length !== columns.length) throw new Error(`expected ${columns.length} values in "${line}"`);
    columns.forEach((c, i) => {
      out[`${prefix}${name} ${c}`] = Number(values[i]);
    });
  }
  return out;
}

/**
 * CPU counters ("cpu <process>") net of what the process burns idle: `idle` was used over `idleMs` doing nothing,
 * `busy` over `busyMs` with the load (and the settle after it), so busy − idle × busyMs / idleMs is the load's own.
 * Named "net cpu <process>"; never below 0 (idle CPU is noisy, and a process the load never touches nets to 0).
 */
export function netOfIdle(idle: Counters, idleMs: number, busy: Counters, busyMs: number): Counters {
  if (!(idleMs > 0)) throw new Error(`an idle baseline over ${idleMs} ms`);
  const out: Counters = {};
  for (const [k, v] of Object.entries(busy)) if (k.startsWith('cpu ')) out[`net ${k}`] = Math.max(0, v - ((idle[k] ?? 0) * busyMs) / idleMs);
  return out;
}
