/** The stored job vocabulary (GET /v1/jobs `status` filter); the wire's IN_QUEUE/IN_PROGRESS/COMPLETED derive from it. */
export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** What every job body shows as `status`, the list's rows included; `outcome` tells the three COMPLETED apart. */
export const WIRE_JOB_STATUSES = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'] as const;
export type WireJobStatus = (typeof WIRE_JOB_STATUSES)[number];

const WIRE: Record<JobStatus, WireJobStatus> = {
  queued: 'IN_QUEUE',
  running: 'IN_PROGRESS',
  succeeded: 'COMPLETED',
  failed: 'COMPLETED',
  canceled: 'COMPLETED',
};

export const wireJobStatus = (stored: JobStatus): WireJobStatus => WIRE[stored];

/**
 * The `status` filter of GET /v1/jobs and of the MCP `list_jobs` tool: the contract's stored vocabulary, and, as an
 * addition, the wire statuses the rows show, so a client can filter on what it reads (`COMPLETED` is the three
 * terminal stored statuses).
 */
export const JOB_STATUS_FILTERS = [...JOB_STATUSES, ...WIRE_JOB_STATUSES] as const;
export type JobStatusFilter = (typeof JOB_STATUS_FILTERS)[number];

/** The stored statuses a filter value stands for. */
export function storedStatusesOf(filter: JobStatusFilter): JobStatus[] {
  return (JOB_STATUSES as readonly JobStatus[]).includes(filter as JobStatus)
    ? [filter as JobStatus]
    : JOB_STATUSES.filter((s) => WIRE[s] === filter);
}
