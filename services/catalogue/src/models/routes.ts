import type { Router } from 'express';
import type { ModelRegistry } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import { cachedJson } from '../cached-json';
import { listingItem, modelRecord, narrowedItem } from './listing';

export function mountModels(r: Router, registry: ModelRegistry): void {
  const all = registry.all();
  const listing = cachedJson({ data: all.map(listingItem) });
  const count = cachedJson({ data: { count: all.filter((m) => m.config.status === 'available').length } });
  const narrowed = (category: string) => {
    const data = all.filter((m) => m.config.category === category).map(narrowedItem);
    return cachedJson({ data, total_count: data.length });
  };
  const byCategory = { embeddings: narrowed('embedding'), images: narrowed('image'), videos: narrowed('video') };
  const records = new Map(all.map((m) => [m.config.id, cachedJson({ data: modelRecord(m) })]));

  r.get(['/v1/models', '/v1/models/user'], (_req, res) => listing(res));
  r.get('/v1/models/count', (_req, res) => count(res));
  r.get('/v1/embeddings/models', (_req, res) => byCategory.embeddings(res));
  r.get('/v1/images/models', (_req, res) => byCategory.images(res));
  r.get('/v1/videos/models', (_req, res) => byCategory.videos(res));
  r.get('/v1/model/:author/:slug', (req, res) => {
    const id = `${req.params.author}/${req.params.slug}`;
    const send = records.get(id);
    if (!send) throw GatewayError.notFound(`Model ${id}`);
    send(res);
  });
}
