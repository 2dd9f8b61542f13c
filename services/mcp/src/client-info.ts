import { z } from 'zod';
import { GatewayError } from '@gateway/errors';

/**
 * The part of initialize's `clientInfo` a session keeps (for the operator's eye, nothing reads it back): name,
 * version and title, each bounded. Anything else a client sends there (icons, a description, megabytes of junk)
 * is not stored, so a free initialize cannot grow the database by more than a row.
 */
const text = (field: string) => z.string().max(256, `clientInfo.${field} is longer than 256 characters`);
const clientInfoSchema = z.object({ name: text('name'), version: text('version'), title: text('title').optional() });

export type StoredClientInfo = z.infer<typeof clientInfoSchema>;

/** The bounded clientInfo to store; a 400 naming the field when one is too long. */
export function storedClientInfo(raw: unknown): StoredClientInfo | undefined {
  if (raw === undefined) return undefined;
  const r = clientInfoSchema.safeParse(raw);
  if (!r.success) throw new GatewayError('invalid_request', `initialize: ${r.error.issues.map((i) => i.message).join('; ')}`);
  return r.data;
}
