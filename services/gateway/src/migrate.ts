import { FLEET_MIGRATIONS, migrateServiceSchema } from './fleet-migrations';

/**
 * The migrate command: applies the named services' migrations (every service's when none is named) to their
 * schemas on DATABASE_URL, prints what it did and exits; 1 on any failure, naming the service. The chart's hook Job
 * and k8s/migrate-job.yaml run it once per service, each with that service's database; fleet services only check
 * their schema at start (libs/db's openFleetServiceDb).
 *
 *   DATABASE_URL=postgres://migrator@pg/billing node --import tsx services/gateway/src/migrate.ts billing
 */
async function main(): Promise<number> {
  const named = process.argv.slice(2);
  const services = named.length ? named : Object.keys(FLEET_MIGRATIONS);
  const unknown = services.filter((s) => !FLEET_MIGRATIONS[s]);
  if (unknown.length) {
    process.stderr.write(
      `migrate: no service named ${unknown.join(', ')}; the services with migrations: ${Object.keys(FLEET_MIGRATIONS).join(', ')}\n`,
    );
    return 2;
  }
  const url = process.env.DATABASE_URL;
  if (!url) {
    process.stderr.write('migrate: DATABASE_URL is required (PostgreSQL, with a role that may create and alter the schemas)\n');
    return 2;
  }
  for (const service of services) {
    try {
      const { applied, kept } = await migrateServiceSchema(url, service);
      process.stdout.write(
        `${service}: ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}${kept.length ? `; kept ${kept.join(', ')}` : ''}\n`,
      );
    } catch (e) {
      process.stderr.write(`migrate: ${service}: ${(e as Error).message}\n`);
      return 1;
    }
  }
  return 0;
}

main().then((code) => process.exit(code));
