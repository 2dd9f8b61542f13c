/**
 * Whether a write of journal records failed in a way that writing them again cannot change. Such a record is
 * dead-lettered (dead-letters.ts) instead of retried: retried, it stopped the write-behind for good, and with it
 * every reader of the tables, the sweeper, admin writes, shutdown and the next start's replay (issue 31).
 *
 * By SQLSTATE class (PostgreSQL appendix A), each a property of the statement and the data, not of the moment:
 * 21 cardinality, 22 data exception (a value out of range, bad text), 23 integrity constraint (a CHECK, a unique
 * index), 2F SQL routine exception, 42 syntax error or access rule, 44 WITH CHECK OPTION, 54 program limit exceeded
 * (an index row too large: the 3 KB Idempotency-Key), 0A feature not supported. Everything else is retried with
 * backoff: 08 connection, 40 rollback (serialization, deadlock), 53 insufficient resources (disk full), 55 object
 * state (a lock), 57 operator intervention (shutdown), 58 and XX system and internal errors, errors without a code
 * (a PGlite worker gone), and P0, raised by ledger_write only for a gap in the sequence, which concerns the write-
 * behind's position, never one record, so dead-lettering records could not cure it.
 */
const DETERMINISTIC_CLASSES = new Set(['0A', '21', '22', '23', '2F', '42', '44', '54']);

/** A record the batch could not even be built from (a malformed or out-of-order journal line). */
export class MalformedRecords extends Error {
  constructor(cause: unknown) {
    super(`ledger records cannot be batched: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

export function cannotApply(err: unknown): boolean {
  if (err instanceof MalformedRecords) return true;
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && DETERMINISTIC_CLASSES.has(code.slice(0, 2));
}

export function sqlStateOf(err: unknown): string | null {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null;
}
