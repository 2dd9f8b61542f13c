import type { Db, Queryable } from '@gateway/db';
import type { JobStatus } from '@gateway/events';
import { type JobRow, normalise } from './job-row';

export interface NewJob {
  id: string;
  accountId: string;
  keyId: string;
  model: string;
  category: string;
  input: Record<string, unknown>;
  n: number;
  durationSeconds: number;
  webhookUrl: string | null;
  idempotencyKey: string | null;
  /** requestFingerprint of the submit, kept with its key so a reuse with another request is refused. */
  requestFingerprint: string | null;
  gatewayRequestId: string;
  hold: unknown;
}

export async function insertJob(tx: Queryable, j: NewJob): Promise<JobRow> {
  const [row] = await tx.query(
    `INSERT INTO jobs (id, account_id, key_id, model, category, status, input, n, duration_seconds, webhook_url, idempotency_key,
                       gateway_request_id, hold, request_fingerprint)
     VALUES ($1, $2, $3, $4, $5, 'queued', $6::jsonb, $7, $8, $9, $10, $11, $12::jsonb, $13) RETURNING *`,
    [
      j.id,
      j.accountId,
      j.keyId,
      j.model,
      j.category,
      JSON.stringify(j.input),
      j.n,
      String(j.durationSeconds),
      j.webhookUrl,
      j.idempotencyKey,
      j.gatewayRequestId,
      JSON.stringify(j.hold),
      j.requestFingerprint,
    ],
  );
  return normalise(row);
}

/** The account's job; another account's answers exactly like an unknown id. */
export async function findJob(db: Queryable, id: string, accountId: string): Promise<JobRow | undefined> {
  const [row] = await db.query('SELECT * FROM jobs WHERE id = $1 AND account_id = $2', [id, accountId]);
  return row ? normalise(row) : undefined;
}

export async function findJobById(db: Queryable, id: string): Promise<JobRow | undefined> {
  const [row] = await db.query('SELECT * FROM jobs WHERE id = $1', [id]);
  return row ? normalise(row) : undefined;
}

export async function findByIdempotencyKey(tx: Queryable, accountId: string, key: string): Promise<JobRow | undefined> {
  const [row] = await tx.query('SELECT * FROM jobs WHERE account_id = $1 AND idempotency_key = $2', [accountId, key]);
  return row ? normalise(row) : undefined;
}

/**
 * Serialises the account's submits until the transaction ends: the concurrency count and the idempotency lookup
 * that follow cannot race another submit of the same account (on PostgreSQL and PGlite alike).
 */
export async function lockAccount(tx: Queryable, accountId: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('jobs:' || $1, 0))`, [accountId]);
}

export async function countInFlight(tx: Queryable, accountId: string): Promise<number> {
  const [row] = await tx.query<{ n: string | number }>(`SELECT count(*) AS n FROM jobs WHERE account_id = $1 AND status IN ('queued', 'running')`, [
    accountId,
  ]);
  return Number(row.n);
}

/** Seconds the model's recent jobs took from submit to end: the basis of a concurrency 429's Retry-After. */
export async function typicalJobSeconds(db: Queryable, accountId: string): Promise<{ typical: number | null; oldestAgeSeconds: number | null }> {
  const [row] = await db.query<{ typical: number | string | null; oldest: number | string | null }>(
    `SELECT (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - created_at))
               FROM (SELECT completed_at, created_at FROM jobs WHERE account_id = $1 AND completed_at IS NOT NULL
                     ORDER BY completed_at DESC LIMIT 20) recent) AS typical,
            (SELECT extract(epoch FROM now() - min(created_at)) FROM jobs WHERE account_id = $1 AND status IN ('queued', 'running')) AS oldest`,
    [accountId],
  );
  const num = (v: number | string | null) => (v === null ? null : Number(v));
  return { typical: num(row.typical), oldestAgeSeconds: num(row.oldest) };
}

/** 1 for the next job of the model's queue; null once the job has left it. Never 0. */
export async function queuePosition(db: Queryable, job: JobRow): Promise<number | null> {
  if (job.status !== 'queued') return null;
  const [row] = await db.query<{ ahead: string | number }>(
    `SELECT count(*) AS ahead FROM jobs WHERE model = $1 AND status = 'queued' AND (created_at, id) < ($2::timestamptz, $3)`,
    [job.model, job.created_at.toISOString(), job.id],
  );
  return Number(row.ahead) + 1;
}

export interface ListFilter {
  accountId: string;
  /** Any of these; all when absent. */
  statuses?: JobStatus[];
  model?: string;
  category?: string;
  /** Rows strictly older than this (created_at, id): the keyset cursor. */
  before?: { createdAt: string; id: string };
  limit: number;
}

/** Newest first, by (created_at, id) so that equal timestamps still page without gaps or repeats. */
export async function listJobs(db: Queryable, f: ListFilter): Promise<JobRow[]> {
  const where = ['account_id = $1'];
  const params: unknown[] = [f.accountId];
  const add = (clause: (n: number) => string, value: unknown) => {
    params.push(value);
    where.push(clause(params.length));
  };
  if (f.statuses) {
    const first = params.length + 1;
    params.push(...f.statuses);
    where.push(`status IN (${f.statuses.map((_, i) => `$${first + i}`).join(', ')})`);
  }
  if (f.model) add((n) => `model = $${n}`, f.model);
  if (f.category) add((n) => `category = $${n}`, f.category);
  if (f.before) {
    params.push(f.before.createdAt, f.before.id);
    where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  params.push(f.limit);
  const rows = await db.query(`SELECT * FROM jobs WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`, params);
  return rows.map(normalise);
}

/**
 * Leases up to `limit` jobs that are due: no other worker holds them, or the one that did has let its lease lapse
 * (it died). The lease is the only licence to drive a job; every later write checks it is still ours.
 */
export async function claimDue(db: Db, owner: string, leaseMs: number, limit: number): Promise<JobRow[]> {
  const rows = await db.query(
    `UPDATE jobs SET lease_owner = $1, lease_until = now() + ($2::integer * interval '1 millisecond')
     WHERE id IN (SELECT id FROM jobs
                  WHERE status IN ('queued', 'running') AND next_poll_at <= now() AND (lease_until IS NULL OR lease_until < now())
                  ORDER BY next_poll_at LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [owner, leaseMs, limit],
  );
  return rows.map(normalise);
}

/**
 * Milliseconds until the next active job could be claimed: when it is due, or when the lease on it lapses if it is
 * later. Undefined when no job is queued or running. The worker sleeps this long instead of polling.
 */
export async function nextClaimIn(db: Queryable): Promise<number | undefined> {
  const rows = await db.query<{ ms: number | string | null }>(
    `SELECT (EXTRACT(EPOCH FROM min(GREATEST(next_poll_at, COALESCE(lease_until, next_poll_at))) - now()) * 1000)::float8 AS ms
     FROM jobs WHERE status IN ('queued', 'running')`,
  );
  const ms = rows[0]?.ms;
  return ms === null || ms === undefined ? undefined : Math.max(0, Number(ms));
}

/** Gives a leased job back, due again after `delayMs`; false when the lease was no longer ours. */
export async function releaseLease(db: Queryable, id: string, owner: string, delayMs: number, set: Record<string, unknown> = {}): Promise<boolean> {
  const keys = Object.keys(set);
  const assignments = keys.map((k, i) => `${k} = $${i + 4}`);
  const rows = await db.query(
    `UPDATE jobs SET lease_owner = NULL, lease_until = NULL, polls = polls + 1,
            next_poll_at = now() + ($3::integer * interval '1 millisecond')${assignments.length ? `, ${assignments.join(', ')}` : ''}
     WHERE id = $1 AND lease_owner = $2 RETURNING id`,
    [id, owner, delayMs, ...keys.map((k) => set[k])],
  );
  return rows.length > 0;
}
