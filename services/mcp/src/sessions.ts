import type { Db } from '@gateway/db';
import { newRequestId } from '@gateway/service-kit';

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

/**
 * Sessions live in the service's own database, not in memory: any replica answers any session, and a restart
 * keeps them. Every lookup is by id and account together, so another account's key never finds a session.
 */
export class SessionStore {
  constructor(private readonly db: Db) {}

  async open(accountId: string, keyId: string, protocolVersion: string, clientInfo: unknown): Promise<Session> {
    const id = newRequestId('mcp');
    await this.db.query(`INSERT INTO sessions (id, account_id, key_id, protocol_version, client_info) VALUES ($1, $2, $3, $4, $5)`, [
      id,
      accountId,
      keyId,
      protocolVersion,
      clientInfo === undefined ? null : JSON.stringify(clientInfo),
    ]);
    return { id, accountId, keyId, protocolVersion, deliveredSeq: 0 };
  }

  /** The live session `id` of `accountId`, touched; undefined when unknown, ended or another account's. */
  async find(id: string, accountId: string): Promise<Session | undefined> {
    const [row] = await this.db.query<{ id: string; account_id: string; key_id: string; protocol_version: string; delivered_seq: string }>(
      `UPDATE sessions SET last_seen_at = now() WHERE id = $1 AND account_id = $2 AND ended_at IS NULL
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
    return this.db.transaction(async (tx) => {
      const ended = await tx.query(`UPDATE sessions SET ended_at = now() WHERE id = $1 AND account_id = $2 AND ended_at IS NULL RETURNING id`, [
        id,
        accountId,
      ]);
      if (ended.length === 0) return false;
      await tx.query(`DELETE FROM session_events WHERE session_id = $1`, [id]);
      await tx.query(`DELETE FROM session_jobs WHERE session_id = $1`, [id]);
      return true;
    });
  }

  async isLive(id: string): Promise<boolean> {
    const rows = await this.db.query(`SELECT 1 FROM sessions WHERE id = $1 AND ended_at IS NULL`, [id]);
    return rows.length > 0;
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

  /** Queues a message for the session's stream; false when `dedupeKey` was queued already (a redelivered event). */
  async enqueue(sessionId: string, dedupeKey: string, message: unknown): Promise<boolean> {
    const rows = await this.db.query(
      `INSERT INTO session_events (session_id, dedupe_key, message)
       SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND ended_at IS NULL)
       ON CONFLICT (session_id, dedupe_key) DO NOTHING RETURNING seq`,
      [sessionId, dedupeKey, JSON.stringify(message)],
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
