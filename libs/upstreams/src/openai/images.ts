import type { GeneratedImage, ImageProtocol, ImageRequest, ImageResult } from '../types';
import { UpstreamError } from '../upstream-error';
import type { JsonCall } from '../http';
import { sniffImageType } from '../mime';
import { openAISize } from './image-size';

/**
 * POST {base_url}/images/generations. No response_format is asked for: gpt-image models do not take it and always
 * answer base64, DALL·E-style servers answer URLs by default; both are read (a caller wanting one passes `extra`).
 */
export function openAIImages(call: JsonCall): ImageProtocol['generateImages'] {
  return async (ep, req, opts) => readImages(await call(ep, '/images/generations', imagesBody(ep.upstreamModel, req), opts), req.n);
}

/**
 * `size` is what OpenAI reads; aspect_ratio, resolution and reference_urls ride along under the gateway's names for
 * the compatible providers that read them instead.
 */
function imagesBody(model: string, req: ImageRequest): Record<string, unknown> {
  const size = req.size ?? openAISize(req.aspectRatio, req.resolution);
  return {
    ...req.extra,
    model,
    prompt: req.prompt,
    n: req.n,
    ...(size !== undefined ? { size } : {}),
    ...(req.quality !== undefined ? { quality: req.quality } : {}),
    ...(req.aspectRatio !== undefined ? { aspect_ratio: req.aspectRatio } : {}),
    ...(req.resolution !== undefined ? { resolution: req.resolution } : {}),
    ...(req.referenceUrls?.length ? { reference_urls: req.referenceUrls } : {}),
  };
}

/**
 * Checks the answer before anyone is charged for it: at least one image, each a fetchable http(s) URL or
 * non-empty base64 (a data: URL counts as base64). Anything else is the upstream's fault and fails over. More
 * images than asked for are cut to `n`: the hold covers only those.
 */
export function readImages(json: unknown, n: number): ImageResult {
  const data = (json as { data?: unknown })?.data;
  if (!Array.isArray(data) || data.length === 0) throw new UpstreamError('protocol', 'upstream answered no images');
  const declared = formatType((json as { output_format?: unknown }).output_format);
  return { images: data.slice(0, n).map((item, i) => readImage(item, declared, i)) };
}

/** A base64 data: URL; its label types bytes no signature identifies. */
const DATA_URL = /^data:([^;,]*)(?:;[^,;]*)*;base64,/i;

function readImage(item: { url?: unknown; b64_json?: unknown } | null, declared: string | undefined, index: number): GeneratedImage {
  const b64 = typeof item?.b64_json === 'string' ? item.b64_json : undefined;
  const url = typeof item?.url === 'string' ? item.url : undefined;
  const inline = b64 ?? url;
  const dataUrl = inline?.match(DATA_URL);
  if (b64 !== undefined || dataUrl) {
    const bytes = Buffer.from((inline as string).slice(dataUrl?.[0].length ?? 0), 'base64');
    if (bytes.length === 0) throw new UpstreamError('protocol', `upstream answered an empty image at index ${index}`);
    return { kind: 'bytes', bytes, contentType: sniffImageType(bytes) ?? (dataUrl?.[1] || declared) ?? 'image/png' };
  }
  if (url !== undefined && /^https?:\/\//i.test(url)) return { kind: 'url', url };
  throw new UpstreamError('protocol', `upstream answered an image with neither an http(s) url nor b64_json at index ${index}`);
}

/** gpt-image models say `output_format: png | jpeg | webp` beside the data. */
function formatType(format: unknown): string | undefined {
  if (typeof format !== 'string' || !/^[a-z0-9.+-]+$/i.test(format)) return undefined;
  const f = format.toLowerCase();
  return `image/${f === 'jpg' ? 'jpeg' : f}`;
}
