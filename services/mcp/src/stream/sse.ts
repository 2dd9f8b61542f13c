import type { Request, Response } from 'express';
import { onClientGone } from '@gateway/service-kit';
import type { Session, SessionStore } from '../sessions';
import type { StreamHub } from './hub';

export interface StreamOptions {
  /** A comment line this often keeps proxies and load balancers from closing an idle stream. */
  keepAliveMs: number;
}

/** Messages read from the queue at a time; a full page means more are waiting. */
const PAGE = 100;

/**
 * GET /v1/mcp: the session's stream of server-initiated messages. Each carries its queue position as the SSE id,
 * so a client reconnecting with Last-Event-ID resumes after the last one it saw; without it, after the last one
 * written to any stream of the session. Ends when the session ends, the client leaves, or the service drains.
 * The stream asks the database only when the hub says there is something to read (hub.ts): never on a timer of its own.
 * The hub refuses (429) a stream past the account's share before anything is written.
 */
export async function runStream(
  req: Request,
  res: Response,
  session: Session,
  deps: { sessions: SessionStore; hub: StreamHub; draining: AbortSignal },
  opts: StreamOptions,
): Promise<void> {
  const resumeFrom = Number(req.headers['last-event-id']);
  const handle = deps.hub.open(session, Number.isSafeInteger(resumeFrom) && resumeFrom >= 0 ? resumeFrom : session.deliveredSeq);
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // Reverse proxies that buffer responses (nginx) must pass each message on as it is written.
    'x-accel-buffering': 'no',
    'mcp-session-id': session.id,
  });
  res.flushHeaders();

  const leave = () => handle.notify('ended');
  // The socket too: a stream pipelined behind an answer whose connection died would otherwise hold its slot for good.
  const unwatch = onClientGone(res, leave);
  deps.draining.addEventListener('abort', leave);
  if (deps.draining.aborted) leave();
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), opts.keepAliveMs);
  try {
    // The first read catches up on what was queued before the stream opened.
    for (let signal: 'events' | 'ended' = 'events'; signal === 'events'; signal = await handle.next()) {
      let page: number;
      do {
        const events = await deps.sessions.eventsAfter(session.id, handle.cursor, PAGE);
        for (const e of events) {
          res.write(`id: ${e.seq}\nevent: message\ndata: ${JSON.stringify(e.message)}\n\n`);
          handle.cursor = e.seq;
        }
        if (events.length > 0) await deps.sessions.markDelivered(session.id, handle.cursor);
        page = events.length;
      } while (page === PAGE && !res.writableEnded && !res.destroyed);
    }
  } finally {
    clearInterval(keepAlive);
    handle.close();
    unwatch();
    deps.draining.removeEventListener('abort', leave);
    res.end();
  }
}
