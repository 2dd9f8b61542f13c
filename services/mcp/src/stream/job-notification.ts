import type { LoggingLevel } from '@modelcontextprotocol/sdk/types.js';

/** What a session is told when one of its jobs ends: a `notifications/message` (MCP logging) with the job's facts. */
export interface JobEnd {
  job_id: string;
  model: string;
  /** succeeded, failed or canceled. */
  outcome: string;
  error_code: string | null;
  gateway_request_id?: string;
}

export function jobEndMessage(end: JobEnd): { dedupeKey: string; message: Record<string, unknown>; level: LoggingLevel } {
  const level: LoggingLevel = end.outcome === 'failed' ? 'error' : 'info';
  return {
    level,
    // One per job and outcome, whichever path noticed it first (the bus, or submit_job finding it already ended).
    dedupeKey: `job:${end.job_id}:${end.outcome}`,
    message: {
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: {
        level,
        logger: 'jobs',
        data: { event: 'job.completed', status: 'COMPLETED', ...end },
      },
    },
  };
}
