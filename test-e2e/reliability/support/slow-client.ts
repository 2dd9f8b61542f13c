import net from 'node:net';
import { type RawAnswer, parseAnswer } from './raw-http';

export interface SlowClient {
  /** Settles when the server closes the connection, with whatever it answered first. */
  readonly cut: Promise<RawAnswer>;
  /** Whether the server has closed the connection yet. */
  readonly closed: boolean;
  /** Bytes written so far. */
  readonly sent: number;
  /** Ends the client from this side (cleanup only). */
  stop(): void;
}

/**
 * A client that writes `head` at once, then one `drip()` at every tick until `drip` returns undefined (then it only
 * waits). It never ends the request unless `drip` does: the server's timeouts are what must end it.
 */
export function slowClient(url: string, head: Buffer | string, drip: () => Buffer | string | undefined, tickMs: number): SlowClient {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  const chunks: Buffer[] = [];
  let sent = 0;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const write = (b: Buffer | string) => {
    if (closed || socket.destroyed || !socket.writable) return;
    sent += Buffer.byteLength(b);
    socket.write(b, () => undefined);
  };
  const cut = new Promise<RawAnswer>((resolve) => {
    let error: string | undefined;
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.on('close', () => {
      closed = true;
      clearInterval(timer);
      resolve({ ...parseAnswer(Buffer.concat(chunks)), closed: true, error });
    });
    // The server's FIN: nothing more will be read, so the client stops writing too.
    socket.on('end', () => socket.end());
  });
  socket.on('connect', () => {
    if (Buffer.byteLength(head) > 0) write(head);
    timer = setInterval(() => {
      const next = drip();
      if (next === undefined) clearInterval(timer);
      else write(next);
    }, tickMs);
  });
  return {
    cut,
    get closed() {
      return closed;
    },
    get sent() {
      return sent;
    },
    stop() {
      clearInterval(timer);
      socket.destroy();
    },
  };
}

/** Hands out `text` one byte at a time, then the bytes of `then(i)` for i = 0, 1, 2... one at a time, forever. */
export function byteByByte(text: string, then: (i: number) => string): () => string {
  let queue = text;
  let i = 0;
  return () => {
    if (queue.length === 0) queue = then(i++);
    const b = queue[0];
    queue = queue.slice(1);
    return b;
  };
}
