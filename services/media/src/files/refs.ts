import type { Db } from '@gateway/db';
import { newRequestId } from '@gateway/service-kit';

export interface FileRef {
  id: string;
  accountId: string;
  source: 'origin' | 'stored';
  location: string;
  contentType: string;
  requestId: string;
  expiresAt: Date;
}

export type NewFileRef = Omit<FileRef, 'id' | 'expiresAt'>;

interface Row {
  id: string;
  account_id: string;
  source: FileRef['source'];
  location: string;
  content_type: string;
  request_id: string;
  expires_at: string | Date;
  [k: string]: unknown;
}

/** The file references of the media service's database, with the clock injected so expiry can be tested. */
export class FileRefs {
  constructor(
    private readonly db: Db,
    /** How long a reference (and bytes stored for it) lives. */
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async create(refs: NewFileRef[]): Promise<FileRef[]> {
    const expiresAt = new Date(this.now() + this.ttlMs);
    const made = refs.map((r) => ({ ...r, id: newRequestId('file'), expiresAt }));
    if (made.length === 0) return made;
    const json = made.map((r) => ({
      id: r.id,
      account_id: r.accountId,
      source: r.source,
      location: r.location,
      content_type: r.contentType,
      request_id: r.requestId,
      expires_at: r.expiresAt.toISOString(),
    }));
    await this.db.query(
      `INSERT INTO file_refs (id, account_id, source, location, content_type, request_id, expires_at)
       SELECT id, account_id, source, location, content_type, request_id, expires_at
       FROM jsonb_to_recordset($1::jsonb) AS r(id text, account_id text, source text, location text, content_type text, request_id text, expires_at timestamptz)`,
      [JSON.stringify(json)],
    );
    return made;
  }

  /** The account's reference; another account's answers exactly like an unknown id. */
  async find(id: string, accountId: string): Promise<FileRef | undefined> {
    const [row] = await this.db.query<Row>('SELECT * FROM file_refs WHERE id = $1 AND account_id = $2', [id, accountId]);
    return row && toRef(row);
  }

  isExpired(ref: FileRef): boolean {
    return ref.expiresAt.getTime() <= this.now();
  }

  /**
   * Stored references past their expiry, oldest first, for the sweeper to delete their bytes. The rows stay, so an
   * expired id keeps answering 410 (permanent) rather than turning into a 404.
   */
  async expiredStored(limit: number): Promise<FileRef[]> {
    const rows = await this.db.query<Row>(`SELECT * FROM file_refs WHERE source = 'stored' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`, [
      new Date(this.now()).toISOString(),
      limit,
    ]);
    return rows.map(toRef);
  }

  /** After the bytes are gone the reference points at nothing; it is kept as an origin-less tombstone. */
  async markPurged(ids: string[]): Promise<void> {
    if (ids.length) await this.db.query(`UPDATE file_refs SET source = 'origin', location = '' WHERE id = ANY($1::text[])`, [ids]);
  }
}

const toRef = (r: Row): FileRef => ({
  id: r.id,
  accountId: r.account_id,
  source: r.source,
  location: r.location,
  contentType: r.content_type,
  requestId: r.request_id,
  expiresAt: r.expires_at instanceof Date ? r.expires_at : new Date(r.expires_at),
});
