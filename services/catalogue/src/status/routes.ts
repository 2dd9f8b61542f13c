import type { Router } from 'express';
import type { Logger } from '@gateway/service-kit';
import { PAGE_HEADERS, statusPage } from '@gateway/web-pages';
import type { Latest, StatusMonitor } from './monitor';
import type { StatusStore } from './store';
import { type StatusBody, statusBody } from './view';
import type { DayCounts } from './vocabulary';

export interface StatusRouteDeps {
  store: StatusStore;
  /** Absent when the monitor is switched off (status.enabled false). */
  monitor?: StatusMonitor;
  now: () => Date;
  /** How long one built answer is served: a sample interval at most, so a new measurement shows within one. */
  ttlMs: number;
  logger: Logger;
}

/**
 * GET /v1/status, and the status page (GET /status, HTML rendered from the very same answer), from stored
 * measurements only; it never calls another service while answering, so it answers while billing (or anything
 * else) is down. If the catalogue's own database cannot be read, the newest in-memory
 * measurements are served with the last history read.
 */
export function mountStatus(r: Router, deps: StatusRouteDeps): void {
  let cached: { body: StatusBody; at: number } | undefined;
  let lastDays = new Map<string, Map<string, DayCounts>>();

  const build = async (now: Date): Promise<StatusBody> => {
    const latest = new Map<string, Latest>();
    let stored = new Map<string, { at: string; outcome: Latest['outcome']; latencyMs: number }>();
    try {
      [stored, lastDays] = await Promise.all([deps.store.latest(), deps.store.days(now)]);
    } catch (err) {
      deps.logger.warn({ err }, 'status history unreadable; answering from memory');
    }
    for (const [k, s] of stored) latest.set(k, s);
    // This replica's own newest measurement wins when it is newer (it may not have reached the database).
    for (const [k, m] of deps.monitor?.latest ?? []) if (!latest.has(k) || (latest.get(k) as Latest).at < m.at) latest.set(k, m);
    return statusBody(now, deps.monitor !== undefined, latest, lastDays);
  };

  const current = async (): Promise<StatusBody> => {
    const now = deps.now();
    if (!cached || now.getTime() - cached.at >= deps.ttlMs) cached = { body: await build(now), at: now.getTime() };
    return cached.body;
  };
  const maxAge = `public, max-age=${Math.floor(deps.ttlMs / 1000)}`;

  r.get('/v1/status', async (_req, res) => {
    const body = await current();
    res.setHeader('cache-control', maxAge).json(body);
  });
  // Rendered on the server so it is useful without script; its script refreshes it from /v1/status.
  r.get('/status', async (_req, res) => {
    const body = await current();
    res.set(PAGE_HEADERS).set('cache-control', maxAge).type('html').send(statusPage(body));
  });
}
