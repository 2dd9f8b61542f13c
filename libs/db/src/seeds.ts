import crypto from 'node:crypto';
import { type Migration, migrate } from './migrate';
import type { PgliteSeed } from './pglite';

/** The seed of a PGlite holding one service's tables in its default schema (openServiceDb's own PGlite). */
export function serviceSeed(service: string, migrations: Migration[]): PgliteSeed {
  return {
    name: service,
    key: seedKey([{ name: service, migrations }]),
    fill: async (db) => {
      await migrate(await db(), service, migrations);
    },
  };
}

/** The seed of a PGlite that several services share, a schema each (openPgliteHost), named after its directory. */
export function sharedSeed(name: string, services: readonly { name: string; migrations: Migration[] }[]): PgliteSeed {
  return {
    name,
    key: seedKey(services),
    fill: async (db) => {
      for (const s of services) await migrate(await db(s.name), s.name, s.migrations);
    },
  };
}

/** A digest of everything a migration run depends on: which schemas, and each migration's id, SQL and version. */
const seedKey = (services: readonly { name: string; migrations: Migration[] }[]) =>
  crypto
    .createHash('sha256')
    .update(JSON.stringify(services.map((s) => [s.name, s.migrations.map((m) => [m.id, m.sql, m.repeatable ?? false, m.version ?? 0])])))
    .digest('hex');
