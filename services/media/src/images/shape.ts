import type { ImageShape } from '@gateway/pricing';
import type { ImageRequest } from '@gateway/upstreams';

/**
 * What the upstream is told: a size kept as is goes alone (a strict upstream such as OpenAI refuses fields it
 * does not know), otherwise the halves in force, which each protocol maps onto its own fields.
 */
export function upstreamShape(shape: ImageShape): Pick<ImageRequest, 'size' | 'aspectRatio' | 'resolution'> {
  if (shape.size !== undefined) return { size: shape.size };
  return {
    ...(shape.aspectRatio !== undefined ? { aspectRatio: shape.aspectRatio } : {}),
    ...(shape.resolution !== undefined ? { resolution: shape.resolution } : {}),
  };
}
