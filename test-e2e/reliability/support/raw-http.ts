import net from 'node:net';

/** What came back on a raw connection: the parsed answer if there was one, and how the connection ended. */
export interface RawAnswer {
  /** Undefined when the server closed (or reset) the connection without answering. */
  status?: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (FIN or reset) before `deadlineMs`. */
  closed: boolean;
  /** The socket's error (ECONNRESET, EPIPE), if one ended it. */
  error?: string;
}

/**
 * Sends `bytes` as they are on a fresh connection and reads one answer: the request line, headers and body are the
 * caller's, byte for byte (invalid UTF-8, floods of headers, broken framing), which fetch would refuse to send.
 * Resolves once a whole answer has arrived or the server closed the connection; after `deadlineMs` without either
 * it resolves with what it has (a hang is then the caller's to judge: `status` undefined, `closed` false).
 */
export function rawExchange(url: string, bytes: Buffer | string, deadlineMs = 15_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let done = false;
    let error: string | undefined;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...parseAnswer(Buffer.concat(chunks)), closed, error });
    };
    const timer = setTimeout(() => finish(false), deadlineMs);
    socket.on('data', (c) => {
      chunks.push(c);
      if (parseAnswer(Buffer.concat(chunks)).complete) finish(false);
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
      finish(true);
    });
    socket.on('close', () => finish(true));
    // A server that answers before reading everything (413, 431) may reset the connection under a long write: the
    // answer, when it got out first, is still read above.
    socket.write(bytes, () => undefined);
  });
}

/** An HTTP/1.1 request with the given head and body; Content-Length is the caller's unless `contentLength` is set. */
export function rawRequest(opts: {
  method: string;
  path: string;
  host: string;
  headers?: Array<[string, string | Buffer]>;
  body?: Buffer | string;
  /** Adds Content-Length for the body (default true when there is a body). */
  contentLength?: boolean;
  /** Sends the body in chunked encoding instead of with a length. */
  chunked?: boolean;
}): Buffer {
  const body = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body);
  const head: Buffer[] = [Buffer.from(`${opts.method} ${opts.path} HTTP/1.1\r\nHost: ${opts.host}\r\nConnection: close\r\n`, 'latin1')];
  for (const [name, value] of opts.headers ?? []) {
    head.push(Buffer.from(`${name}: `, 'latin1'), Buffer.isBuffer(value) ? value : Buffer.from(value, 'latin1'), Buffer.from('\r\n'));
  }
  if (body && opts.chunked) head.push(Buffer.from('Transfer-Encoding: chunked\r\n'));
  else if (body && opts.contentLength !== false) head.push(Buffer.from(`Content-Length: ${body.length}\r\n`));
  head.push(Buffer.from('\r\n'));
  if (!body) return Buffer.concat(head);
  if (!opts.chunked) return Buffer.concat([...head, body]);
  const parts: Buffer[] = [];
  for (let i = 0; i < body.length; i += 16_384) {
    const piece = body.subarray(i, i + 16_384);
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
  }
  return Buffer.concat([...head, ...parts, Buffer.from('0\r\n\r\n')]);
}

/** Parses one HTTP/1.1 answer out of the bytes read so far; `complete` once its whole body has arrived. */
export function parseAnswer(buf: Buffer): { status?: number; headers: Record<string, string>; body: string; complete: boolean } {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return { headers: {}, body: '', complete: false };
  const [statusLine, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const rest = buf.subarray(end + 4);
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
    const out: Buffer[] = [];
    let at = 0;
    for (;;) {
      const eol = rest.indexOf('\r\n', at);
      if (eol < 0) return { status, headers, body: Buffer.concat(out).toString('utf8'), complete: false };
      const size = Number.parseInt(rest.subarray(at, eol).toString('latin1'), 16);
      if (size === 0) return { status, headers, body: Buffer.concat(out).toString('utf8'), complete: true };
      if (rest.length < eol + 2 + size + 2) return { status, headers, body: Buffer.concat(out).toString('utf8'), complete: false };
      out.push(rest.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
  }
  const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
  const complete = length === undefined ? false : rest.length >= length;
  return { status, headers, body: rest.subarray(0, length).toString('utf8'), complete };
}
