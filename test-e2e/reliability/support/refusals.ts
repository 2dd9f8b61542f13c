import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** What an answer looked like, whether it came through fetch or a raw socket. */
export interface Answer {
  status?: number;
  headers: Record<string, string>;
  body: string;
}

export async function answerOf(res: Response): Promise<Answer> {
  return { status: res.status, headers: Object.fromEntries(res.headers.entries()), body: await res.text() };
}

const REQUEST_ID = /^req_[a-z0-9]{24}$/;

/**
 * The spec's refusal: a 4xx (never a 5xx, never no answer) whose body is the envelope
 * `{error: {code, message, request_id}}`, the request id also on `X-Gateway-Request-Id`. `statuses` narrows the
 * status where the input decides it (413, 431, 401...). Throws (a jest expectation) otherwise, naming the answer.
 */
export function expectRefusal(a: Answer, what: string, statuses?: number[]): { code: string; requestId: string } {
  const shown = `${what} → ${a.status ?? 'no answer'} ${a.body.slice(0, 300)}`;
  if (a.status === undefined || a.status < 400 || a.status > 499) throw new Error(`expected a 4xx: ${shown}`);
  if (statuses && !statuses.includes(a.status)) throw new Error(`expected ${statuses.join(' or ')}: ${shown}`);
  let body: any;
  try {
    body = JSON.parse(a.body);
  } catch {
    throw new Error(`the refusal is not JSON: ${shown}`);
  }
  const e = body?.error;
  const envelope =
    e !== null &&
    typeof e === 'object' &&
    Object.keys(body).length === 1 &&
    typeof e.code === 'string' &&
    typeof e.message === 'string' &&
    typeof e.request_id === 'string' &&
    REQUEST_ID.test(e.request_id);
  if (!envelope) throw new Error(`not the error envelope: ${shown}`);
  if (a.headers['x-gateway-request-id'] !== e.request_id)
    throw new Error(`X-Gateway-Request-Id ${a.headers['x-gateway-request-id']} is not the envelope's ${e.request_id}: ${shown}`);
  return { code: e.code, requestId: e.request_id };
}

/**
 * /v1/mcp's session errors are JSON-RPC, not the envelope (the spec's one exception): a 4xx carrying
 * `{jsonrpc: "2.0", error: {code: -32600}}`, the request id still on the header. Anything else must be the envelope.
 */
export function expectMcpRefusal(a: Answer, what: string): void {
  let body: any;
  try {
    body = JSON.parse(a.body);
  } catch {
    body = undefined;
  }
  if (body?.jsonrpc === '2.0' && body.error) {
    const shown = `${what} → ${a.status} ${a.body.slice(0, 300)}`;
    if (a.status !== 400 && a.status !== 404) throw new Error(`a JSON-RPC refusal must be 400 or 404: ${shown}`);
    if (body.error.code !== -32600) throw new Error(`a session error is JSON-RPC -32600: ${shown}`);
    if (!REQUEST_ID.test(a.headers['x-gateway-request-id'] ?? '')) throw new Error(`no X-Gateway-Request-Id: ${shown}`);
    return;
  }
  expectRefusal(a, what);
}

/** How many inputs were tried, per route and per kind of input, for the report the suite prints and writes. */
export class Tally {
  private readonly counts = new Map<string, Map<string, number>>();

  add(route: string, kind: string): void {
    const byKind = this.counts.get(route) ?? new Map<string, number>();
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
    this.counts.set(route, byKind);
  }

  total(): number {
    let n = 0;
    for (const byKind of this.counts.values()) for (const c of byKind.values()) n += c;
    return n;
  }

  /** Prints the table and writes it as JSON under the system's temporary directory; returns the file's path. */
  report(name: string): string {
    const routes = [...this.counts.entries()].sort(([a], [b]) => a.localeCompare(b));
    const data = {
      total: this.total(),
      routes: Object.fromEntries(
        routes.map(([route, byKind]) => [route, { total: [...byKind.values()].reduce((s, c) => s + c, 0), ...Object.fromEntries(byKind) }]),
      ),
    };
    const file = path.join(os.tmpdir(), `${name}-counts.json`);
    fs.writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
    const lines = routes.map(
      ([route, byKind]) =>
        `${route.padEnd(44)} ${String([...byKind.values()].reduce((s, c) => s + c, 0)).padStart(5)}  ${[...byKind.entries()]
          .map(([k, c]) => `${k} ${c}`)
          .join(', ')}`,
    );
    console.log(`${name}: ${data.total} inputs tried (${file})\n${lines.join('\n')}`);
    return file;
  }
}
