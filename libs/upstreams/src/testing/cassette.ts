import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';

/**
 * One recorded upstream answer: the status, headers and body bytes a provider sent. Stored as `.http` files under
 * fixtures/<provider>/ (the status line, one `name: value` header a line, a blank line, then the body exactly as
 * sent), so the bytes are what a test replays: no formatter rewrites them and no code re-serialises them.
 */
export interface Cassette {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export const FIXTURES = path.join(__dirname, 'fixtures');

/** fixtures/<provider>/<name>.http, read. */
export function cassette(provider: string, name: string): Cassette {
  const raw = fs.readFileSync(path.join(FIXTURES, provider, `${name}.http`));
  const end = raw.indexOf('\n\n');
  if (end < 0) throw new Error(`${provider}/${name}.http has no blank line after its head`);
  const [statusLine, ...headerLines] = raw.subarray(0, end).toString('utf8').split('\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})\b/.exec(statusLine)?.[1]);
  if (!status) throw new Error(`${provider}/${name}.http does not start with an HTTP/1.1 status line`);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status, headers, body: raw.subarray(end + 2) };
}

/** The same answer with its body rewritten (usage removed or garbled, an end marker dropped). */
export const withBody = (c: Cassette, body: Buffer | string): Cassette => ({ ...c, body: Buffer.isBuffer(body) ? body : Buffer.from(body) });

/** A JSON answer edited in place: `edit` changes the parsed body (returning nothing) or returns a new one. */
export function editJson(c: Cassette, edit: (json: any) => unknown): Cassette {
  const json = JSON.parse(c.body.toString('utf8'));
  const out = edit(json);
  return withBody(c, JSON.stringify(out === undefined ? json : out));
}

/**
 * An SSE answer edited frame by frame: `edit` gets each frame's JSON data (non-JSON data such as `[DONE]` as its
 * text) and returns the data to send, or null to drop the frame. Frames keep their other lines (`event:`).
 */
export function editSse(c: Cassette, edit: (data: any) => unknown): Cassette {
  const frames = c.body
    .toString('utf8')
    .split(/\n\n/)
    .filter((f) => f.trim() !== '');
  const out: string[] = [];
  for (const frame of frames) {
    const lines = frame.split('\n');
    const at = lines.findIndex((l) => l.startsWith('data:'));
    if (at < 0) {
      out.push(frame);
      continue;
    }
    const text = lines[at].slice(5).trim();
    let data: unknown = text;
    try {
      data = JSON.parse(text);
    } catch {
      /* [DONE] and other plain text */
    }
    const edited = edit(data);
    if (edited === null) continue;
    lines[at] = `data: ${typeof edited === 'string' ? edited : JSON.stringify(edited)}`;
    out.push(lines.join('\n'));
  }
  return withBody(c, `${out.map((f) => `${f}\n\n`).join('')}`);
}

export interface PlayOptions {
  /** Sends only the first `cutAt` bytes of the body, then drops the connection: the upstream breaking mid-answer. */
  cutAt?: number;
}

/** Replays a cassette on a fake upstream's response, without a content-length (chunked, as providers stream). */
export function play(res: http.ServerResponse, c: Cassette, opts: PlayOptions = {}): void {
  res.writeHead(c.status, c.headers);
  if (opts.cutAt === undefined) return void res.end(c.body);
  res.write(c.body.subarray(0, opts.cutAt), () => res.socket?.destroy());
}
