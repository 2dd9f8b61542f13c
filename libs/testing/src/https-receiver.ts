import fs from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * A self-signed certificate for `localhost` and 127.0.0.1, valid for 100 years, committed so every run trusts the same
 * one. A client trusts it the standard Node.js way: NODE_EXTRA_CA_CERTS=<TLS_CERT_PATH>, set before the process starts
 * (scripts/test.mjs sets it for every jest run).
 */
// Kept beside the e2e suites, where scripts/test.mjs, the docs and every test command line name it.
const TLS_DIR = path.resolve(__dirname, '../../../test-e2e/support/tls');
export const TLS_CERT_PATH = path.join(TLS_DIR, 'localhost.crt');
export const TLS_KEY_PATH = path.join(TLS_DIR, 'localhost.key');

/**
 * Fails with how to run the suite when this process does not trust the test certificate: Node reads
 * NODE_EXTRA_CA_CERTS only at start-up, so setting it from inside a test is too late.
 */
export function requireTrustedTestCert(): void {
  const set = process.env.NODE_EXTRA_CA_CERTS;
  if (set && bundleHoldsTestCert(set)) return;
  throw new Error(
    `this suite needs NODE_EXTRA_CA_CERTS naming a file with ${path.relative(process.cwd(), TLS_CERT_PATH)} (it is ${set ? `"${set}"` : 'not set'}); ` +
      `pnpm test sets it, or run: NODE_EXTRA_CA_CERTS=test-e2e/support/tls/localhost.crt npx jest <path> --selectProjects integration`,
  );
}

/** The file itself, or a bundle that contains it (scripts/test.mjs appends it to a bundle the caller already trusts). */
function bundleHoldsTestCert(file: string): boolean {
  try {
    return fs.readFileSync(file, 'utf8').includes(fs.readFileSync(TLS_CERT_PATH, 'utf8').trim());
  } catch {
    return false;
  }
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The exact bytes received, for signature checks. */
  body: Buffer;
  at: number;
}

/** What to do with one request: answer with a status, or never answer (the sender's timeout must end it). */
export type Reply = number | 'hang';

export interface HttpsReceiver {
  /** `https://localhost:<port>`: the certificate names localhost. */
  url: string;
  port: number;
  received: ReceivedRequest[];
  /** Replies for the next requests, in order; once used up, every request gets `otherwise`. */
  reply(...replies: Reply[]): void;
  close(): Promise<void>;
}

export async function startHttpsReceiver(opts: { host?: string; port?: number; otherwise?: Reply } = {}): Promise<HttpsReceiver> {
  const received: ReceivedRequest[] = [];
  const script: Reply[] = [];
  const otherwise = opts.otherwise ?? 204;
  const server = https.createServer({ key: fs.readFileSync(TLS_KEY_PATH), cert: fs.readFileSync(TLS_CERT_PATH) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
      const reply = script.shift() ?? otherwise;
      if (reply !== 'hang') res.writeHead(reply, { 'content-type': 'text/plain' }).end(`status ${reply}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://localhost:${port}`,
    port,
    received,
    reply: (...replies) => void script.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        // Hung requests keep their sockets open; close() alone would wait for them.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
