import type { Router } from 'express';
import type { ModelRegistry } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import { listingItem, modelRecord, narrowedItem } from './listing';

/** Listings change only with the config, so they are built once and cached by clients for a minute. */
const CACHE = 'public, max-age=60';

export function mountModels(r: Router, registry: ModelRegistry): void {
  const all = registry.all();
  const listing = { data: all.map(listingItem) };
  const count = { data: { count: all.filter((m) => m.config.status === 'available').length } };
  const narrowed = (category: string) => {
    const data = all.filter((m) => m.config.category === category).map(narrowedItem);
    return { data, total_count: data.length };
  };
  const byCategory = { embeddings: narrowed('embedding'), images: narrowed('image'), videos: narrowed('video') };

  r.get(['/v1/models', '/v1/models/user'], (_req, res) => {
    res.setHeader('cache-control', CACHE).json(listing);
  });
  r.get('/v1/models/count', (_req, res) => {
    res.setHeader('cache-control', CACHE).json(count);
  });
  r.get('/v1/embeddings/models', (_req, res) => void res.setHeader('cache-control', CACHE).json(byCategory.embeddings));
  r.get('/v1/images/models', (_req, res) => void res.setHeader('cache-control', CACHE).json(byCategory.images));
  r.get('/v1/videos/models', (_req, res) => void res.setHeader('cache-control', CACHE).json(byCategory.videos));
  r.get('/v1/model/:author/:slug', (req, res) => {
    const m = registry.get(`${req.params.author}/${req.params.slug}`);
    if (!m) throw GatewayError.notFound(`Model ${req.params.author}/${req.params.slug}`);
    res.setHeader('cache-control', CACHE).json({ data: modelRecord(m) });
  });
}
