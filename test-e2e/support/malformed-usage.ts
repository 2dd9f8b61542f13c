/**
 * Usage figures a broken or hostile upstream can send, by the name the fakes take them under (upstream model
 * `bad-usage-<name>`). The gateway must bill its own count instead, as when no usage comes at all.
 */
export const MALFORMED_USAGE = {
  fraction: 10.5,
  string: '010',
  negative: -990,
  huge: 1e300,
} as const;

export type MalformedUsageKind = keyof typeof MALFORMED_USAGE;

export const MALFORMED_USAGE_KINDS = Object.keys(MALFORMED_USAGE) as MalformedUsageKind[];

/** The figure the fake sends for `model`, when the model asks for a malformed one. */
export function malformedCountOf(model: string): unknown {
  const m = /^bad-usage-(\w+)$/.exec(model);
  return m && m[1] in MALFORMED_USAGE ? MALFORMED_USAGE[m[1] as MalformedUsageKind] : undefined;
}
