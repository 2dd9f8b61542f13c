import { spendControlFields } from '@gateway/config';
import { z } from 'zod';

/** The contract's bounds (Limits): prompt length in characters, images per request. */
export const MAX_PROMPT_CHARACTERS = 32_000;
export const MAX_IMAGES = 10;
/** Ours: enough reference images for any model we know of, few enough that a body of them stays small. */
export const MAX_REFERENCE_URLS = 16;
/** Ours: the longest URL browsers and CDNs reliably pass along. */
export const MAX_URL_LENGTH = 2048;
/** Ours: size, aspect_ratio, resolution and quality are short words ("1024x1024", "16:9", "4K", "high"). */
export const MAX_HINT_LENGTH = 64;

/** Characters as people count them (code points), not UTF-16 units: an emoji is one, as the contract means. */
const characters = (s: string) => (s.length <= MAX_PROMPT_CHARACTERS ? s.length : [...s].length);

const hint = z.string().min(1, 'must not be empty').max(MAX_HINT_LENGTH);
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(MAX_URL_LENGTH);

/**
 * POST /v1/images/generations and /v1/images. Unknown fields are the model's own input and travel upstream in
 * `extra`; the named fields win over them. Two fields of OpenAI's API are the gateway's to answer, so neither is
 * forwarded: `response_format` (the answer is always URLs under /v1/files) and `stream` (the connection is held
 * until the images exist).
 */
export const imagesBody = z
  .looseObject({
    model: z.string().min(1),
    prompt: z
      .string()
      .min(1, 'must not be empty')
      .refine((s) => characters(s) <= MAX_PROMPT_CHARACTERS, `must be at most ${MAX_PROMPT_CHARACTERS} characters`),
    n: z.number().int().min(1).max(MAX_IMAGES).default(1),
    size: hint.optional(),
    aspect_ratio: hint.optional(),
    resolution: hint.optional(),
    quality: hint.optional(),
    reference_urls: z.array(httpUrl).max(MAX_REFERENCE_URLS).optional(),
    response_format: z.literal('url', 'only "url": generated images are answered as URLs under /v1/files').optional(),
    stream: z.literal(false, 'streamed image generation is not offered: the answer comes once every image exists').optional(),
    /** The gateway's routing preferences (OpenRouter's `provider`) and cost cap (`max_cost`): read here, never forwarded in `extra`. */
    ...spendControlFields,
  })
  .transform(
    ({
      model,
      prompt,
      n,
      size,
      aspect_ratio,
      resolution,
      quality,
      reference_urls,
      response_format: _f,
      stream: _s,
      provider,
      max_cost,
      ...extra
    }) => ({
      model,
      prompt,
      n,
      size,
      aspect_ratio,
      resolution,
      quality,
      reference_urls,
      provider,
      max_cost,
      extra,
    }),
  );

export type ImagesBody = z.output<typeof imagesBody>;
