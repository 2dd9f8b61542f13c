import type { Db } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { newRequestId } from '@gateway/service-kit';
import type { StoredClientInfo } from './client-info';

export interface Session {
  id: string;
  accountId: string;
  keyId: string;
  protocolVersion: string;
  deliveredSeq: number;
}

export interface StreamEvent {
  seq: number;
  message: unknown;
}

/** What the shared poller learns of one session with a stream open on this process. */
export interface StreamState {
  id: string;
  /** Ended, expired, or never there: its streams close. */
  ended: boolean;
  /** Messages are queued after the cursor the poller asked about. */
  pending: boolean;
}

export interface SessionBounds {
  /** A session unused this long is gone: not found, and deleted by the sweep. */
  idleTtlMs: number;
  /** Live sessions one account may hold. */
  perAccount: number;
}

/**
 * Sessions live in the service's own database, not in memory: any replica answers any session, and a restart
 * keeps them. Every lookup is by id and account together, so another account's key never finds a session.
 * An ended session's row is deleted with its queued messages and job links (the caller sees 404 either way).
 */
export class SessionStore {
  constructor(
    private readonly db: Db,
    private readonly bounds: SessionBounds,
  ) {}

  /** The idle bound as SQL: `last_seen_at` later than this is a live session. */
  private get liveSince(): string {
    return `now() - make_interval(secs => ${this.bounds.idleTtlMs / 1000})`;
  }

  /**
   * Opens a session, or refuses (429) when the account holds its share of live ones already. The account's lock
   * makes the count and the insert one step, so concurrent initializes cannot pass the cap together.
   */
  async open(accountId: string, keyId: string, protocolVersion: string, clientInfo: StoredClientInfo | undefined): Promise<Session> {
    const id = newRequestId('mcp');
    await this.db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('mcp-sessions:' || $1, 0))`, [accountId]);
      const [{ n }] = await tx.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM sessions WHERE account_id = $1 AND ended_at IS NULL AND last_seen_at > ${this.liveSince}`,
        [accountId],
      );
      if (n >= this.bounds.perAccount) {
        throw new GatewayError(
          'rate_limited',
          `This account has ${n} open MCP sessions, the most it may hold: end one (DELETE /v1/mcp) or let an idle one expire ` +
            `(after ${this.bounds.idleTtlMs / 60_000} min unused)`,
          { headers: { 'retry-after': '60', 'x-gateway-limit-type': 'concurrency' } },
        );
      }
      await tx.query(`INSERT INTO sessions (id, account_id, key_id, protocol_version, client_info) VALUES ($1, $2, $3, $4, $5)`, [
        id,
        accountId,
        keyId,
        protocolVersion,
        clientInfo === undefined ? null : JSON.stringify(clientInfo),
      ]);
    });
    return { id, accountId, keyId, protocolVersion, deliveredSeq: 0 };
  }

  /** The live session `id` of `accountId`, touched; undefined when unknown, ended, expired or another account's. */
  async find(id: string, accountId: string): Promise<Session | undefined> {
    const [row] = await this.db.query<{ id: string; account_id: string; key_id: string; protocol_version: string; delivered_seq: string }>(
      `UPDATE sessions SET last_seen_at = now() WHERE id = $1 AND account_id = $2 AND ended_at IS NULL AND last_seen_at > ${this.liveSince}
       RETURNING id, account_id, key_id, protocol_version, delivered_seq::text AS delivered_seq`,
      [id, accountId],
    );
    if (!row) return undefined;
    return {
      id: row.id,
      accountId: row.account_id,
      keyId: row.key_id,
      protocolVersion: row.protocol_version,
      deliveredSeq: Number(row.delivered_seq),
    };
  }

  /** Ends the session; false when there was no live one. Its queued events and job links go with it; the key is untouched. */
  async end(id: string, accountId: string): Promise<boolean> {
    const rows = await this.db.query(`DELETE FROM sessions WHERE id = $1 AND account_id = $2 AND ended_at IS NULL RETURNING id`, [id, accountId]);
    return rows.length > 0;
  }

  /** Deletes every session ended or unused past the idle bound, with its messages and job links; how many went. */
  async sweep(): Promise<number> {
    const rows = await this.db.query(`DELETE FROM sessions WHERE ended_at IS NOT NULL OR last_seen_at <= ${this.liveSince} RETURNING id`);
    return rows.length;
  }

  /** Marks sessions in use (their streams are open here), so the sweep leaves them. */
  async touch(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(`UPDATE sessions SET last_seen_at = now() WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb)) AND ended_at IS NULL`, [
      JSON.stringify(ids),
    ]);
  }

  /**
   * One query for every session with a stream open on this process: which ended, and which have messages after the
   * given cursor. The streams wait on this instead of each asking the database on its own.
   */
  async streamStates(cursors: Array<{ id: string; after: number }>): Promise<StreamState[]> {
    if (cursors.length === 0) return [];
    return this.db.query<{ id: string; ended: boolean; pending: boolean }>(
      `SELECT c.id, s.id IS NULL AS ended,
              EXISTS (SELECT 1 FROM session_events e WHERE e.session_id = c.id AND e.seq > c.after) AS pending
       FROM jsonb_to_recordset($1::jsonb) AS c(id text, after bigint)
       LEFT JOIN sessions s ON s.id = c.id AND s.ended_at IS NULL AND s.last_seen_at > ${this.liveSince}`,
      [JSON.stringify(cursors)],
    );
  }

  /** The lowest log level (its rank) the session wants to be sent, set by logging/setLevel. */
  async setLogRank(id: string, rank: number): Promise<void> {
    await this.db.query(`UPDATE sessions SET log_rank = $2 WHERE id = $1`, [id, rank]);
  }

  /** Links a submitted job to the session, so the job's state events reach its stream. */
  async linkJob(sessionId: string, accountId: string, jobId: string): Promise<void> {
    await this.db.query(`INSERT INTO session_jobs (job_id, session_id, account_id) VALUES ($1, $2, $3) ON CONFLICT (job_id) DO NOTHING`, [
      jobId,
      sessionId,
      accountId,
    ]);
  }

  /** The live session that submitted `jobId` for `accountId`, if any. */
  async sessionOfJob(jobId: string, accountId: string): Promise<string | undefined> {
    const [row] = await this.db.query<{ session_id: string }>(
      `SELECT j.session_id FROM session_jobs j JOIN sessions s ON s.id = j.session_id
       WHERE j.job_id = $1 AND j.account_id = $2 AND s.ended_at IS NULL`,
      [jobId, accountId],
    );
    return row?.session_id;
  }

  /**
   * Queues a message of log rank `rank` for the session's stream; false when `dedupeKey` was queued already (a
   * redelivered event), or the session asked for nothing below a higher level (logging/setLevel).
   */
  async enqueue(sessionId: string, dedupeKey: string, message: unknown, rank: number): Promise<boolean> {
    const rows = await this.db.query(
      `INSERT INTO session_events (session_id, dedupe_key, message)
       SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND ended_at IS NULL AND log_rank <= $4)
       ON CONFLICT (session_id, dedupe_key) DO NOTHING RETURNING seq`,
      [sessionId, dedupeKey, JSON.stringify(message), rank],
    );
    return rows.length > 0;
  }

  /** Messages queued after `afterSeq`, oldest first. */
  async eventsAfter(sessionId: string, afterSeq: number, limit = 100): Promise<StreamEvent[]> {
    const rows = await this.db.query<{ seq: string; message: unknown }>(
      `SELECT seq::text AS seq, message FROM session_events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [sessionId, afterSeq, limit],
    );
    return rows.map((r) => ({ seq: Number(r.seq), message: typeof r.message === 'string' ? JSON.parse(r.message) : r.message }));
  }

  /** Records what a stream has written, so the next stream opened without Last-Event-ID resumes after it. */
  async markDelivered(sessionId: string, seq: number): Promise<void> {
    await this.db.query(`UPDATE sessions SET delivered_seq = GREATEST(delivered_seq, $2) WHERE id = $1`, [sessionId, seq]);
  }
}
