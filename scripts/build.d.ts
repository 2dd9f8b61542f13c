/** Types of scripts/build.js (plain CommonJS, so the staleness check runs before anything is compiled). */

/** Bundle name -> its source entry, relative to the repository root; each becomes dist/<name>.cjs. */
export const ENTRIES: Readonly<Record<string, string>>;
export const OUT_DIR: string;
/** Builds every bundle now. */
export function build(): Promise<{ outputs: string[]; inputs: number }>;
/**
 * Builds when dist/ is stale; resolves to the reason it built, or undefined when dist/ was current. `root` and
 * `rebuild` default to this repository and build (tests pass their own).
 */
export function buildIfStale(root?: string, rebuild?: () => Promise<unknown>): Promise<string | undefined>;
/** Why dist/ under `root` (the repository by default) no longer matches the sources, or undefined when it does. */
export function staleReason(root?: string): string | undefined;
/** Records under <root>/dist what a build was made from (`inputs`, relative to root), for staleReason. */
export function writeStamp(root: string, inputs: string[]): void;
