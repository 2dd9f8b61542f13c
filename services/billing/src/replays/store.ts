import { GatewayError } from '@gateway/errors';
import type { Db } from '@gateway/db';
import { REPLAY_WINDOW_MS, type ReplayClaim, type ReplayClaimRequest, type ReplayPort } from '@gateway/billing-client';

interface Row {
  fingerprint: string;
  request_id: string;
  state: 'running' | 'answered' | 'finished';
  streamed: boolean;
  status: number | null;
  headers: Record<string, string> | string | null;
  body: string | null;
  leased: boolean;
}

const WINDOW = `${REPLAY_WINDOW_MS} milliseconds`;

/**
 * The replay record on billing's database (PostgreSQL in the fleet, PGlite embedded; not the in-memory ledger,
 * whose journal is for money): plain rows, written before the answer goes out, so a restart keeps them.
 */
export function replayStore(db: Db): ReplayPort & { sweep(): Promise<number> } {
  async function claim(req: ReplayClaimRequest, tries: number): Promise<ReplayClaim> {
    const { accountId, idempotencyKey, fingerprint, requestId, leaseMs } = req;
    const lease = `${leaseMs} milliseconds`;
    // An expired record not yet swept is as good as gone: the key starts afresh.
    await db.query('DELETE FROM idempotent_answers WHERE account_id = $1 AND idempotency_key = $2 AND expires_at <= now()', [
      accountId,
      idempotencyKey,
    ]);
    // Two first calls racing: the primary key lets one claim; the other reads the winner's row below.
    const inserted = await db.query(
      `INSERT INTO idempotent_answers (account_id, idempotency_key, fingerprint, request_id, state, lease_until, expires_at)
       VALUES ($1, $2, $3, $4, 'running', now() + $5::interval, now() + $6::interval) ON CONFLICT DO NOTHING RETURNING 1 AS claimed`,
      [accountId, idempotencyKey, fingerprint, requestId, lease, WINDOW],
    );
    if (inserted.length === 1) return { kind: 'run' };
    const [row] = await db.query<Row & Record<string, unknown>>(
      `SELECT fingerprint, request_id, state, streamed, status, headers, body, lease_until > now() AS leased
         FROM idempotent_answers WHERE account_id = $1 AND idempotency_key = $2`,
      [accountId, idempotencyKey],
    );
    // Dropped between the two statements (the first call failed): claim it again.
    if (!row) return again(req, tries);
    if (row.fingerprint !== fingerprint)
      throw new GatewayError(
        'duplicate_request',
        'This Idempotency-Key was already used with a different request (route or body); send a new key for a new request',
      );
    if (row.state === 'answered' && row.status !== null && row.body !== null) {
      const headers = typeof row.headers === 'string' ? JSON.parse(row.headers) : (row.headers ?? {});
      return { kind: 'replay', requestId: row.request_id, answer: { status: row.status, headers, body: row.body } };
    }
    if (row.state === 'finished') return { kind: 'finished', requestId: row.request_id, streamed: row.streamed };
    // Billing's own internal retry of the same request.
    if (row.request_id === requestId) return { kind: 'run' };
    if (row.leased)
      throw new GatewayError('duplicate_request', 'Another request with this Idempotency-Key is still running; wait for it, then retry');
    // The claimer died without an answer (its hold expired with its lease): this retry takes the key over.
    const taken = await db.query(
      `UPDATE idempotent_answers SET request_id = $4, lease_until = now() + $5::interval
        WHERE account_id = $1 AND idempotency_key = $2 AND request_id = $3 AND state = 'running' RETURNING 1 AS taken`,
      [accountId, idempotencyKey, row.request_id, requestId, lease],
    );
    return taken.length === 1 ? { kind: 'run' } : again(req, tries);
  }

  // Each pass lost a race to a neighbour that changed the row; a few passes settle it, a livelock would be a bug.
  function again(req: ReplayClaimRequest, tries: number): Promise<ReplayClaim> {
    if (tries >= 3)
      throw new GatewayError('duplicate_request', 'Another request with this Idempotency-Key is still running; wait for it, then retry');
    return claim(req, tries + 1);
  }

  return {
    claimReplay: (req) => claim(req, 0),

    async finishReplay({ accountId, idempotencyKey, requestId, streamed, answer }) {
      await db.query(
        `UPDATE idempotent_answers SET state = $4, streamed = $5, status = $6, headers = $7::jsonb, body = $8
          WHERE account_id = $1 AND idempotency_key = $2 AND request_id = $3 AND state = 'running'`,
        [
          accountId,
          idempotencyKey,
          requestId,
          answer ? 'answered' : 'finished',
          streamed,
          answer?.status ?? null,
          answer ? JSON.stringify(answer.headers) : null,
          answer?.body ?? null,
        ],
      );
    },

    async dropReplay({ accountId, idempotencyKey, requestId }) {
      await db.query(`DELETE FROM idempotent_answers WHERE account_id = $1 AND idempotency_key = $2 AND request_id = $3 AND state = 'running'`, [
        accountId,
        idempotencyKey,
        requestId,
      ]);
    },

    async sweep() {
      const rows = await db.query('DELETE FROM idempotent_answers WHERE expires_at <= now() RETURNING 1 AS gone');
      return rows.length;
    },
  };
}
