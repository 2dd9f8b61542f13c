/** The shapes OpenAI's image models take (gpt-image-1's sizes), as width / height. */
const SHAPES = [
  { ratio: 1, size: '1024x1024' },
  { ratio: 1.5, size: '1536x1024' },
  { ratio: 1 / 1.5, size: '1024x1536' },
];

const DIMENSIONS = /^\s*(\d+)\s*x\s*(\d+)\s*$/i;
const RATIO = /^\s*(\d+(?:\.\d+)?)\s*[:/]\s*(\d+(?:\.\d+)?)\s*$/;
const TIER = /^\s*(\d+)\s*k\s*$/i;

/**
 * The OpenAI `size` for a call that gave aspect_ratio and/or resolution but no size; undefined when nothing maps.
 * OpenAI takes only a few fixed sizes, so:
 * - a resolution in dimensions (1024x1024) is the size itself;
 * - otherwise the ratio (square when none is given) picks the nearest of 1024x1024, 1536x1024 and 1024x1536, as
 *   the API contract snaps ratios to the nearest one accepted (16:9 → 1536x1024, 4:5 → 1024x1536);
 * - a tier above 1K (2K, 4K) has no OpenAI size, and neither has an unreadable ratio: nothing is sent then, the
 *   model's default applies, and aspect_ratio and resolution still ride along for the providers that read them.
 */
export function openAISize(aspectRatio: string | undefined, resolution: string | undefined): string | undefined {
  if (aspectRatio === undefined && resolution === undefined) return undefined;
  const dims = resolution?.match(DIMENSIONS);
  if (dims) return `${Number(dims[1])}x${Number(dims[2])}`;
  if (resolution !== undefined && resolution.match(TIER)?.[1] !== '1') return undefined;
  if (aspectRatio === undefined) return SHAPES[0].size;
  const parts = aspectRatio.match(RATIO);
  const ratio = parts ? Number(parts[1]) / Number(parts[2]) : Number.NaN;
  if (!Number.isFinite(ratio) || ratio <= 0) return undefined;
  // Nearest on a log scale, so 2:1 and 1:2 are equally far from square.
  const distance = (r: number) => Math.abs(Math.log(ratio / r));
  return SHAPES.reduce((best, s) => (distance(s.ratio) < distance(best.ratio) ? s : best)).size;
}
