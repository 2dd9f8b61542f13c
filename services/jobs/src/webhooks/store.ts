import type { Db } from '@gateway/db';
import { z } from 'zod';
import type { AttemptResult } from './send';

const claimedSchema = z.object({
  id: z.string(),
  job_id: z.string(),
  account_id: z.string(),
  url: z.string(),
  body: z.string(),
  /** Already counting the attempt about to be made. */
  attempts: z.coerce.number().int().positive(),
});
export type ClaimedDelivery = z.infer<typeof claimedSchema>;

/** What becomes of a delivery after an attempt. */
export type NextStep = { state: 'delivered' } | { state: 'failed' } | { state: 'pending'; delayMs: number };

/**
 * Takes up to `limit` due deliveries for `owner` until the lease runs out. SKIP LOCKED lets replicas claim side by side
 * without waiting on each other, and the lease (checked in the inner WHERE) keeps a claimed row away from them until it
 * is finished or its owner is presumed dead. The attempt is counted here, before it is made: a process that dies
 * mid-send still used that attempt, so a crashing sender cannot retry a delivery forever.
 */
export async function claimDue(db: Db, owner: string, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  const rows = await db.query(
    `UPDATE webhook_deliveries d
        SET attempts = d.attempts + 1, lease_owner = $1, lease_until = now() + $2::double precision * interval '1 millisecond'
      WHERE d.id IN (
        SELECT id FROM webhook_deliveries
         WHERE state = 'pending' AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())
         ORDER BY next_attempt_at
         LIMIT $3
         FOR UPDATE SKIP LOCKED)
      RETURNING d.id, d.job_id, d.account_id, d.url, d.body, d.attempts`,
    [owner, leaseMs, limit],
  );
  return rows.map((r) => claimedSchema.parse(r));
}

/**
 * Milliseconds until the next pending delivery may be claimed (its next attempt is due and no live lease holds it),
 * 0 when one already may; undefined when none is pending.
 */
export async function nextDueIn(db: Db): Promise<number | undefined> {
  const rows = await db.query<{ ms: number | string | null }>(
    `SELECT (EXTRACT(EPOCH FROM min(GREATEST(next_attempt_at, COALESCE(lease_until, next_attempt_at))) - now()) * 1000)::float8 AS ms
       FROM webhook_deliveries WHERE state = 'pending'`,
  );
  const ms = rows[0]?.ms;
  return ms === null || ms === undefined ? undefined : Math.max(0, Number(ms));
}

/**
 * Records the attempt and moves the delivery on, releasing the lease, in one transaction. The attempt row is written even
 * when the lease was lost meanwhile (the send did happen); the delivery is then left to its new owner.
 * Returns whether this owner still held the lease.
 */
export async function finishAttempt(
  db: Db,
  owner: string,
  delivery: ClaimedDelivery,
  attempt: { sentAt: Date; timestamp: number; result: AttemptResult },
  next: NextStep,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const moved = await tx.query(
      `UPDATE webhook_deliveries
          SET state = $4::text,
              next_attempt_at = CASE WHEN $4::text = 'pending' THEN now() + $5::double precision * interval '1 millisecond' ELSE next_attempt_at END,
              completed_at = CASE WHEN $4::text = 'pending' THEN NULL ELSE now() END,
              lease_owner = NULL, lease_until = NULL
        WHERE id = $1 AND lease_owner = $2 AND attempts = $3
        RETURNING id`,
      [delivery.id, owner, delivery.attempts, next.state, next.state === 'pending' ? next.delayMs : 0],
    );
    await tx.query(
      `INSERT INTO webhook_attempts (delivery_id, attempt, sent_at, signed_timestamp, status_code, error, duration_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (delivery_id, attempt) DO NOTHING`,
      [delivery.id, delivery.attempts, attempt.sentAt, attempt.timestamp, attempt.result.statusCode, attempt.result.error, attempt.result.durationMs],
    );
    return moved.length === 1;
  });
}

/** Fails a delivery whose every attempt was used, the last by an owner that died before recording its outcome. */
export async function abandon(db: Db, owner: string, delivery: ClaimedDelivery): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries
        SET state = 'failed', attempts = attempts - 1, completed_at = now(), lease_owner = NULL, lease_until = NULL
      WHERE id = $1 AND lease_owner = $2 AND attempts = $3`,
    [delivery.id, owner, delivery.attempts],
  );
}
