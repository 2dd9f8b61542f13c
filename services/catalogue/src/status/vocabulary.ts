/**
 * The three vocabularies of the status monitor, kept apart on purpose (the contract forbids mapping the wire's two by
 * case): a sample's outcome (stored), a component's or the platform's current status (upper case on the wire), and a
 * history day's state (lower case on the wire). Every conversion is an explicit table or rule below.
 */

/** What one measurement found. Stored in status_samples and counted in status_days. */
export const OUTCOMES = ['ok', 'degraded', 'down'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** `status` of a component and `overall`. */
export const STATUSES = ['OPERATIONAL', 'DEGRADED', 'DOWN', 'UNCONFIGURED'] as const;
export type Status = (typeof STATUSES)[number];

/** `state` of one history day. */
export const DAY_STATES = ['operational', 'degraded', 'down', 'none'] as const;
export type DayState = (typeof DAY_STATES)[number];

/** A component's current status is its newest measurement's outcome. */
export const STATUS_OF_OUTCOME: Record<Outcome, Status> = { ok: 'OPERATIONAL', degraded: 'DEGRADED', down: 'DOWN' };

/** A day is operational at 99% of its samples ok or better; at least half its samples down make it down. */
export const OPERATIONAL_DAY_UPTIME = 0.99;

export interface DayCounts {
  samples: number;
  ok: number;
  degraded: number;
  down: number;
}

/** A history day's state from its counts; a day without samples is `none`, whatever came before or after it. */
export function dayState(c: DayCounts): DayState {
  if (c.samples === 0) return 'none';
  if (c.ok / c.samples >= OPERATIONAL_DAY_UPTIME) return 'operational';
  if (c.down * 2 >= c.samples) return 'down';
  return 'degraded';
}

/**
 * The platform's status from its monitored components: DOWN when the API is down or every component is; DEGRADED
 * when any is not operational; UNCONFIGURED when nothing is monitored.
 */
export function overallStatus(components: { key: string; status: Status }[]): Status {
  const monitored = components.filter((c) => c.status !== 'UNCONFIGURED');
  if (monitored.length === 0) return 'UNCONFIGURED';
  if (monitored.every((c) => c.status === 'DOWN') || monitored.some((c) => c.key === 'api' && c.status === 'DOWN')) return 'DOWN';
  if (monitored.some((c) => c.status !== 'OPERATIONAL')) return 'DEGRADED';
  return 'OPERATIONAL';
}
