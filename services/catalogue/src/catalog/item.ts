import type { ResolvedModel } from '@gateway/config';
import { capabilitiesOf } from '../derive/capabilities';
import { headlineOf } from '../derive/headline';
import { referenceOf } from '../derive/reference';

/** The `{slug}` of `/v1/model/{author}/{slug}`: the id after its author, so a page can link the single-model route. */
export const slugOf = (id: string): string => id.slice(id.indexOf('/') + 1);

/** When each model first appeared, as recorded in the catalogue's database (first-seen.ts). */
export type FirstSeen = ReadonlyMap<string, string>;

/**
 * `added_at` as an ISO 8601 UTC timestamp (a bare date is its midnight UTC): the operator's word wins. Absent, when
 * the model first appeared in a config this gateway ran (recorded once in the database, so the same after a
 * restart and on every replica); null only where nothing recorded it (the listings' tests, without a database).
 */
export const addedAtOf = (m: ResolvedModel, firstSeen?: FirstSeen): string | null =>
  m.config.added_at === undefined ? (firstSeen?.get(m.config.id) ?? null) : new Date(m.config.added_at).toISOString();

/** One GET /v1/catalog item, camelCase like the route; every field from the config, derived where it is silent. */
export function catalogueItem(m: ResolvedModel, firstSeen?: FirstSeen) {
  const c = m.config;
  return {
    id: c.id,
    slug: slugOf(c.id),
    name: c.name,
    description: c.description ?? '',
    category: c.category,
    status: c.status,
    ...headlineOf(m),
    reference: referenceOf(m),
    speed: c.speed ?? '',
    featured: c.featured ?? false,
    capabilities: capabilitiesOf(m),
    // Every item has the field (the shape is fixed per route); null where the config gives none (non-text models).
    contextLength: c.context_length ?? null,
    addedAt: addedAtOf(m, firstSeen),
  };
}
