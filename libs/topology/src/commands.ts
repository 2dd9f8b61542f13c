/**
 * How a container runs a process of the gateway (deploy/Dockerfile, the chart's values, k8s/), from /app: node is
 * the process, with tsx loaded into it as a module loader. Never the tsx CLI: it runs the script in a child
 * process and, on SIGTERM, SIGKILLs that child if it does not acknowledge within about 60 ms, so a busy service
 * died without draining. `pnpm fleet` starts its processes with the same argv, and a test holds the manifests to it.
 */
export const processCommand = (entry: string): string[] => ['node', '--import', 'tsx', entry];

/** A fleet process's command: the edge or a service of the service table. */
export const serviceCommand = (name: string): string[] => processCommand(`services/${name}/src/main.ts`);

/** The migrate command for one service's schema (the chart's hook Job, k8s/migrate-job.yaml). */
export const migrateCommand = (service: string): string[] => [...processCommand('services/gateway/src/migrate.ts'), service];

/** The image's default command: the embedded gateway, every service in one process. */
export const EMBEDDED_COMMAND = processCommand('services/gateway/src/main.ts');
