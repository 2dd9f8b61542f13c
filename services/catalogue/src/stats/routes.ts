import type { Router } from 'express';
import type { ModelRegistry } from '@gateway/config';
import type { SharedAnswers } from '../shared-answers';
import type { StatsStore } from './store';

export interface Stats {
  accounts: number;
  tokens: number;
  providers: number;
  models: number;
  generatedAt: string;
}

/** Available models, and the providers serving at least one of them: both from the config, fixed per process. */
export function registryCounts(registry: ModelRegistry): { providers: number; models: number } {
  const available = registry.all().filter((m) => m.config.status === 'available');
  return { models: available.length, providers: new Set(available.flatMap((m) => m.endpoints.map((e) => e.provider.id))).size };
}

/**
 * GET /v1/stats. One answer is computed and then served for `ttlMs` (five minutes by default, the contract's
 * cache), so `generatedAt` says how old the figures are; clients may keep it for what is left of that time.
 */
export function mountStats(
  r: Router,
  registry: ModelRegistry,
  store: StatsStore,
  opts: { ttlMs: number; now: () => Date; shared?: SharedAnswers },
): void {
  const counts = registryCounts(registry);
  let cached: { stats: Stats; at: number } | undefined;
  let pending: Promise<Stats> | undefined;

  const compute = async (): Promise<Stats> => {
    const now = opts.now();
    const kept = await opts.shared?.get('stats').catch(() => undefined);
    let stats: Stats | undefined = kept ? JSON.parse(kept) : undefined;
    if (!stats) {
      const [accounts, tokens] = await Promise.all([store.accounts(), store.tokens(now)]);
      const ours: Stats = { accounts, tokens, ...counts, generatedAt: now.toISOString() };
      // Another replica may have computed the same period first: everyone serves the first answer kept.
      const offered = await opts.shared?.offer('stats', JSON.stringify(ours), opts.ttlMs).catch(() => undefined);
      stats = offered ? (JSON.parse(offered) as Stats) : ours;
    }
    cached = { stats, at: Date.parse(stats.generatedAt) };
    return stats;
  };

  r.get('/v1/stats', async (_req, res) => {
    const now = opts.now().getTime();
    let stats = cached && now - cached.at < opts.ttlMs ? cached.stats : undefined;
    if (!stats) {
      // Concurrent misses share one computation.
      pending ??= compute().finally(() => (pending = undefined));
      stats = await pending;
    }
    const age = Math.floor((now - Date.parse(stats.generatedAt)) / 1000);
    const maxAge = Math.max(0, Math.floor(opts.ttlMs / 1000) - age);
    res.setHeader('cache-control', `public, max-age=${maxAge}`).json(stats);
  });
}
