import type { IncomingHttpHeaders } from 'node:http';

/** The three accepted forms: `Authorization: Bearer <key>`, `Authorization: <key>`, `x-api-key: <key>`. */
export function extractKey(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.trim()) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth.trim());
    return m ? m[1] : auth.trim();
  }
  const x = headers['x-api-key'];
  return typeof x === 'string' && x.trim() ? x.trim() : undefined;
}
