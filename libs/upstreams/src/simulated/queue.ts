import crypto from 'node:crypto';
import { z } from 'zod';
import type { QueueLog, QueueProtocol, QueueStatus } from '../types';
import { UpstreamError } from '../upstream-error';
import { silentMp4 } from './mp4';

/** How long a simulated request waits before it starts, and the cap on how long it then runs. */
export const SIMULATED_QUEUE_MS = 300;
const MS_PER_VIDEO_SECOND = 100;
const MAX_RUN_MS = 1_500;
const DEFAULT_SECONDS = 5;

/** Prompt markers that make a simulated request fail at its result, so failures can be tried offline. */
export const REJECT_MARKER = '[[reject]]';
export const FAIL_MARKER = '[[fail]]';

/**
 * Everything the simulator needs to answer later, carried in the request id itself: any gateway process, before or
 * after a restart, answers the same id the same way, and nothing is stored.
 */
const ticketSchema = z.object({
  v: z.literal(1),
  /** Submit time, ms since the epoch. */
  t: z.number().int().nonnegative(),
  /** Seconds of video per output. */
  d: z.number().positive().max(600),
  n: z.number().int().min(1).max(10),
  /** The prompt's failure marker, if any. */
  f: z.enum(['reject', 'fail']).optional(),
  /** Two submits in the same millisecond still get distinct ids. */
  k: z.string(),
});
type Ticket = z.infer<typeof ticketSchema>;

const inputSchema = z.object({
  prompt: z.string().optional(),
  // fal video models take duration as a string ("5"); the gateway's own field is a number.
  duration: z
    .union([
      z.number(),
      z
        .string()
        .regex(/^\d+(\.\d+)?s?$/)
        .transform((s) => Number.parseFloat(s)),
    ])
    .optional(),
  n: z.number().int().optional(),
});

const encode = (t: Ticket) => Buffer.from(JSON.stringify(t)).toString('base64url');

function decode(id: string): Ticket {
  try {
    return ticketSchema.parse(JSON.parse(Buffer.from(id, 'base64url').toString('utf8')));
  } catch {
    throw new UpstreamError('status', 'simulated upstream knows no such request', 404, false);
  }
}

const runMs = (t: Ticket) => Math.min(t.d * MS_PER_VIDEO_SECOND, MAX_RUN_MS);

function stateAt(t: Ticket, now: number): QueueStatus['state'] {
  const elapsed = now - t.t;
  if (elapsed < SIMULATED_QUEUE_MS) return 'IN_QUEUE';
  return elapsed < SIMULATED_QUEUE_MS + runMs(t) ? 'IN_PROGRESS' : 'COMPLETED';
}

/** The lines a real model prints, each stamped when it "happened"; only those already past are shown. */
function logsAt(t: Ticket, now: number): QueueLog[] {
  const start = t.t + SIMULATED_QUEUE_MS;
  const lines: Array<[number, string]> = [
    [t.t, 'Request queued'],
    [start, `Generating ${t.n} video${t.n > 1 ? 's' : ''} of ${t.d}s`],
    [start + runMs(t) / 2, 'Rendering frames: 50%'],
    [start + runMs(t), 'Rendering frames: 100%'],
  ];
  return lines.filter(([at]) => at <= now).map(([at, message]) => ({ message, level: 'INFO', timestamp: new Date(at).toISOString() }));
}

export const simulatedVideoUrl = (id: string, index: number) => `simulated://video/${id}/${index}.mp4`;
const VIDEO_URL = /^simulated:\/\/video\/([A-Za-z0-9_-]+)\/(\d+)\.mp4$/;

function output(id: string, t: Ticket): Record<string, unknown> {
  const size = silentMp4(t.d).length;
  const videos = Array.from({ length: t.n }, (_, i) => ({
    url: simulatedVideoUrl(id, i),
    content_type: 'video/mp4',
    file_name: `video-${i}.mp4`,
    file_size: size,
  }));
  return { video: videos[0], ...(t.n > 1 ? { videos } : {}), seconds: t.d };
}

/**
 * The simulator's fal-style queue: a request waits ~300 ms, runs 100 ms per second of video (at most 1.5 s), then
 * completes with silent MP4s of the asked length. `now` is injectable so tests step through the states.
 */
export function createSimulatedQueue(now: () => number = Date.now): QueueProtocol {
  return {
    async submit(_ep, input) {
      const parsed = inputSchema.safeParse(input);
      if (!parsed.success) throw new UpstreamError('status', `invalid input: ${parsed.error.issues[0]?.message ?? 'unknown'}`, 422);
      const { prompt, duration = DEFAULT_SECONDS, n = 1 } = parsed.data;
      if (!(duration > 0 && duration <= 600)) throw new UpstreamError('status', 'duration must be between 0 and 600 seconds', 422);
      if (n < 1 || n > 10) throw new UpstreamError('status', 'n must be between 1 and 10', 422);
      const f = prompt?.includes(REJECT_MARKER) ? 'reject' : prompt?.includes(FAIL_MARKER) ? 'fail' : undefined;
      const ticket: Ticket = { v: 1, t: now(), d: duration, n, ...(f ? { f } : {}), k: crypto.randomBytes(4).toString('hex') };
      return { upstreamId: encode(ticket) };
    },
    async status(_ep, { upstreamId }, opts) {
      const t = decode(upstreamId);
      const at = now();
      const state = stateAt(t, at);
      return {
        state,
        // Counts down as the wait runs out, reaching 0 ("next") as fal's does.
        queuePosition: state === 'IN_QUEUE' ? Math.max(0, Math.ceil((SIMULATED_QUEUE_MS - (at - t.t)) / 100) - 1) : null,
        logs: opts.logs ? logsAt(t, at) : [],
        inferenceTime: state === 'COMPLETED' ? runMs(t) / 1000 : null,
      };
    },
    async result(_ep, { upstreamId }) {
      const t = decode(upstreamId);
      if (stateAt(t, now()) !== 'COMPLETED') throw new UpstreamError('status', 'simulated request is still in progress', 409, false);
      if (t.f === 'reject') throw new UpstreamError('status', 'content_policy_violation: the prompt was flagged (simulated)', 422, true);
      if (t.f === 'fail') throw new UpstreamError('status', 'upstream answered 500: simulated failure', 500);
      return output(upstreamId, t);
    },
    // Stateless: there is nothing to stop, and a finished request answers as before.
    async cancel() {},
    async download(_ep, url) {
      const m = VIDEO_URL.exec(url);
      if (!m) throw new UpstreamError('protocol', 'not a simulated video URL');
      const t = decode(m[1]);
      if (Number(m[2]) >= t.n) throw new UpstreamError('status', 'simulated upstream has no such video', 404, false);
      return { bytes: silentMp4(t.d), contentType: 'video/mp4' };
    },
  };
}
