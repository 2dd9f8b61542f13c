import { isUtf8 } from 'node:buffer';
import type { z } from 'zod';
import { GatewayError } from '@gateway/errors';

/** Parses a request part with its zod schema, once, at the boundary; the message names every bad field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  // Express leaves the body undefined when none came (or one the JSON parser skipped).
  if (value === undefined)
    throw new GatewayError('invalid_request', 'Request body is missing: send a JSON object with Content-Type: application/json');
  // The first issue of a field says what is wrong with it; zod goes on checking a value of the wrong type against
  // the field's other rules (a string `models` is "too big" for an array's max(10)), which only misleads.
  const seen = new Set<string>();
  const firstPerField = r.error.issues.filter((i) => {
    const key = JSON.stringify(i.path);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const detail = firstPerField
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join('.') : 'body'}: ${i.message}`)
    .join('; ');
  throw new GatewayError('invalid_request', `Invalid request: ${detail}`);
}

/**
 * How deep a request body's arrays and objects may nest. Generous for any real request (a tool's JSON schema
 * included), and far below what breaks the recursive steps every body meets after the parse.
 */
const MAX_JSON_DEPTH = 128;

const NUL_REFUSAL = 'Request body holds a NUL character (\\u0000), which the gateway does not accept';
const bodyRefusal = (message: string) => Object.assign(new Error(message), { status: 400, type: 'entity.verify.failed' });

/**
 * body-parser's `verify` for every JSON body (express.json, and express.raw where a route parses JSON itself): a
 * 400 before the parse for bytes that are not UTF-8, which the decoder would otherwise replace with U+FFFD and
 * hand on, forwarded and billed, as the client's text; for nesting deeper than MAX_JSON_DEPTH, which
 * overflowed the stack of the steps after the parse (JSON.stringify of the prompt for the hold, of the answer, of
 * a job's input) into 503s, and crashed PGlite's worker when stored as jsonb; and for a NUL character (the escape
 * \u0000, the only way JSON carries one), which no PostgreSQL text or jsonb holds, so a job's input, an MCP
 * client's name or a key's label carrying one failed in the database (503). One pass over the raw bytes.
 */
export function checkJsonBody(_req: unknown, _res: unknown, buf: Buffer, encoding: string | null): void {
  // A declared UTF-16 body is decoded as such; every other JSON body is UTF-8 (RFC 8259).
  if ((encoding === null || /^utf-?8$/i.test(encoding)) && !isUtf8(buf)) throw bodyRefusal('Request body is not valid UTF-8');
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c) {
        if (buf[i + 1] === 0x75 && buf.toString('latin1', i + 2, i + 6) === '0000') throw bodyRefusal(NUL_REFUSAL);
        i++;
      } else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) throw bodyRefusal(`Request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
}
