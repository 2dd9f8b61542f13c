import type { Request, Response } from 'express';
import type { Session, SessionStore } from '../sessions';
import type { Notifier } from './notifier';

export interface StreamOptions {
  /** How often a stream looks for messages another replica queued, and whether its session ended elsewhere. */
  pollMs: number;
  /** A comment line this often keeps proxies and load balancers from closing an idle stream. */
  keepAliveMs: number;
}

/**
 * GET /v1/mcp: the session's stream of server-initiated messages. Each carries its queue position as the SSE id,
 * so a client reconnecting with Last-Event-ID resumes after the last one it saw; without it, after the last one
 * written to any stream of the session. Ends when the session ends, the client leaves, or the service drains.
 */
export async function runStream(
  req: Request,
  res: Response,
  session: Session,
  deps: { sessions: SessionStore; notifier: Notifier; draining: AbortSignal },
  opts: StreamOptions,
): Promise<void> {
  const resumeFrom = Number(req.headers['last-event-id']);
  let cursor = Number.isSafeInteger(resumeFrom) && resumeFrom >= 0 ? resumeFrom : session.deliveredSeq;
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // Reverse proxies that buffer responses (nginx) must pass each message on as it is written.
    'x-accel-buffering': 'no',
    'mcp-session-id': session.id,
  });
  res.flushHeaders();

  let wake: (() => void) | undefined;
  const nudge = () => wake?.();
  const off = deps.notifier.onWake(session.id, nudge);
  let gone = false;
  const leave = () => {
    gone = true;
    nudge();
  };
  res.on('close', leave);
  deps.draining.addEventListener('abort', leave);
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), opts.keepAliveMs);
  try {
    while (!gone) {
      const events = await deps.sessions.eventsAfter(session.id, cursor);
      for (const e of events) {
        res.write(`id: ${e.seq}\nevent: message\ndata: ${JSON.stringify(e.message)}\n\n`);
        cursor = e.seq;
      }
      if (events.length > 0) await deps.sessions.markDelivered(session.id, cursor);
      if (!(await deps.sessions.isLive(session.id))) break;
      if (events.length === 100) continue; // a full page: more are waiting
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, opts.pollMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  } finally {
    clearInterval(keepAlive);
    off();
    res.off('close', leave);
    deps.draining.removeEventListener('abort', leave);
    res.end();
  }
}
