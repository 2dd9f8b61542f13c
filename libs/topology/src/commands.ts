/**
 * How a container runs a process of the gateway (deploy/Dockerfile, the chart's values, k8s/), from /app: node runs a
 * bundle that `pnpm build` (scripts/build.js) made of the entry point, dist/<name>.cjs, so no TypeScript loader sits in
 * the process (it cost each process about 50-60 MiB; docs/benchmarks.md). Node itself is the process: a signal
 * reaches the service. `pnpm fleet` starts its processes with the same argv, and a test holds the manifests to it.
 */
export const bundleCommand = (name: string): string[] => ['node', '--enable-source-maps', `dist/${name}.cjs`];

/**
 * The same process from its TypeScript source, with tsx loaded into node as a module loader (GATEWAY_FROM_SOURCE=1,
 * `pnpm start:source`): for development, no build needed. Never the tsx CLI: it runs the script in a child process
 * and, on SIGTERM, SIGKILLs that child if it does not acknowledge within about 60 ms.
 */
export const sourceCommand = (entry: string): string[] => ['node', '--import', 'tsx', entry];

/**
 * V8's garbage collector in a fleet process, measured with `pnpm bench ab` on the fleet (docs/benchmarks.md,
 * 2026-11-29 18:04-19:47):
 * - a young generation of 16 MiB a semi-space, Node 20's default, named so that a Node upgrade cannot change it
 *   unseen. From 2026-11-28 it was 4 MiB, for idle memory; 4 and 8 MiB cost about a fifth more CPU per chat request
 *   (a scavenge every few milliseconds copies the calls still in flight), and the compiled bundles idle at 73-87 MiB
 *   a process either way once V8's memory reducer has run, 20-40 s after the start;
 * - `--single-threaded-gc`: no GC helper threads. Seven processes, PostgreSQL and Redis share a machine's cores (a
 *   pod's CPU request is a fraction of one), where helpers only contend with the other processes: 3-12 % less CPU
 *   per request in three runs, never more.
 */
export const FLEET_V8_FLAGS = ['--max-semi-space-size=16', '--single-threaded-gc'];

/** A fleet process's command: the edge or a service of the service table. */
export const serviceCommand = (name: string, from: 'bundle' | 'source' = 'bundle'): string[] =>
  withNodeFlags(FLEET_V8_FLAGS, from === 'bundle' ? bundleCommand(name) : sourceCommand(`services/${name}/src/main.ts`));

/** A command with node's own flags put right after `node`, where node reads them. */
function withNodeFlags(flags: readonly string[], [node, ...rest]: string[]): string[] {
  return [node, ...flags, ...rest];
}

/** The migrate command for one service's schema (the chart's hook Job, k8s/migrate-job.yaml). */
export const migrateCommand = (service: string): string[] => [...bundleCommand('migrate'), service];

/**
 * glibc's malloc for `pnpm start` (package.json's start script sets GLIBC_TUNABLES to this, after any the caller
 * set). By default each thread's arena keeps what it freed: V8's compiler threads, optimising PGlite's WebAssembly
 * at start, left about 100 MiB of freed memory resident in theirs for the life of the process.
 * - A fixed trim threshold gives an arena's free top above 1 MiB back to the system: about 80 MiB less RSS idle and
 *   70 MiB less at the peak under chat (docs/benchmarks.md, 2026-11-28 15:10-15:35).
 * - The trim cannot reach free holes under an arena's top (`malloc_trim(0)`, called by hand in an idle gateway, freed
 *   23 MiB more). Very likely they are the compilers' 32 KiB work segments, freed between small blocks that live on.
 *   With the mmap threshold at 32 KiB each such segment is a mapping of its own, unmapped when freed. With
 *   EMBEDDED_V8_FLAGS: 278 -> 225 MiB idle after a first start and 290 -> 223 after a restart (medians of three), a
 *   first start 0.4 s longer, and chat at c=50 0.94x as fast, inside the rounds' spread (docs/benchmarks.md,
 *   2026-11-28 20:00-21:00).
 * The image is Alpine (musl), which has no such tunables.
 */
export const EMBEDDED_MALLOC_TUNABLES = 'glibc.malloc.trim_threshold=1048576:glibc.malloc.mmap_threshold=32768';

/**
 * V8's memory reducer, which gives an idle heap's pages back, starts 2 s after the last full collection instead of
 * 8 s: the start's garbage (young generation grown to its full size, old pages freed by the last collections) is
 * returned a few seconds after the gateway is ready, not 10-20 s later. The reducer acts only while the allocation
 * rate is low, so a busy gateway is not collected more often for it.
 *
 * The old generation may grow to twice what the last full collection kept, not four times. Under chat at c=50 the
 * serving heap keeps 30-45 MiB live, but V8's default (up to 4x when the mutator is fast) let it fill to 155-190 MiB,
 * mostly garbage, before the next full collection, and RSS kept that high-water mark: about 400 MiB at the bench's peak
 * against 320 with this flag. The price is more full collections: CPU per request x1.09, req/s x0.94 in one
 * `pnpm bench ab` (docs/benchmarks.md, 2026-11-29 00:00-00:45). 150 and 200 left the peak at 327-365 MiB. Measured
 * again once the ledger kept a quarter of its finished request ids (2026-11-29 03:45-05:00), at 6,000-7,000 req/s:
 * 304-324 MiB with 100, 326-367 with 150, 391-434 without the flag.
 */
export const EMBEDDED_V8_FLAGS = ['--gc-memory-reducer-start-delay-ms=2000', '--heap-growing-percent=100'];

/** The image's default command: the embedded gateway, every service in one process. */
export const EMBEDDED_COMMAND = withNodeFlags(EMBEDDED_V8_FLAGS, bundleCommand('gateway'));
