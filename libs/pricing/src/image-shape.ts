/** The three ways a request may say what shape of image it wants. */
export interface ShapeFields {
  size?: string;
  aspect_ratio?: string;
  resolution?: string;
}

/** The shape in force once the contract's precedence is applied. */
export interface ImageShape {
  aspectRatio?: string;
  /** Also what the rate is keyed on (imageRate). */
  resolution?: string;
  /** The client's own size, sent as it came: only when it alone says what is wanted (see resolveShape). */
  size?: string;
}

const DIMENSIONS = /^(\d+)\s*[x×]\s*(\d+)$/i;
const RATIO = /^\d+(?:\.\d+)?\s*:\s*\d+(?:\.\d+)?$/;
const TIER = /^(\d+)\s*k$/i;

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** Which halves a size states: dimensions both, a ratio the ratio, a tier the resolution; anything else neither. */
function halvesOf(size: string): { ratio?: string; resolution?: string; dimensions?: true } {
  const s = size.trim();
  const dims = DIMENSIONS.exec(s);
  if (dims) {
    const [w, h] = [Number(dims[1]), Number(dims[2])];
    const d = gcd(w, h) || 1;
    return { ratio: `${w / d}:${h / d}`, resolution: `${w}x${h}`, dimensions: true };
  }
  if (RATIO.test(s)) return { ratio: s.replace(/\s+/g, '') };
  const tier = TIER.exec(s);
  if (tier) return { resolution: `${Number(tier[1])}K` };
  return {};
}

/**
 * The contract's precedence: aspect_ratio and resolution win over size, and size sets only the half it states
 * (`1024x1024` both, `16:9` the ratio, `2K` the resolution). The client's size is also kept as is when nothing
 * overrides it and it is dimensions (what OpenAI-style upstreams read) or a value the gateway does not read
 * (`auto`): the upstream then gets exactly what the client wrote. It lives with the prices because the resolution
 * in force is what an image is priced at: the route and the MCP quote must read a request the same way.
 */
export function resolveShape(f: ShapeFields): ImageShape {
  const stated = f.size === undefined ? {} : halvesOf(f.size);
  const shape: ImageShape = { aspectRatio: f.aspect_ratio ?? stated.ratio, resolution: f.resolution ?? stated.resolution };
  const overridden = f.aspect_ratio !== undefined || f.resolution !== undefined;
  const unread = stated.ratio === undefined && stated.resolution === undefined;
  if (f.size !== undefined && !overridden && (stated.dimensions || unread)) shape.size = f.size;
  return shape;
}
