export type Row = Record<string, unknown>;

export interface Queryable {
  query<T extends Row = Row>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/**
 * The storage port. Fleet services get `pg` (a pool on PostgreSQL, search_path set to the service's schema);
 * the embedded gateway gets PGlite under GATEWAY_DATA_DIR (billing's own, and one the other services share, a schema each).
 * Both speak the same SQL, so migrations and queries are written once.
 */
export interface Db extends Queryable {
  readonly kind: 'pg' | 'pglite';
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
