import type { EmbeddingProtocol, EmbeddingResult } from '../types';
import { UpstreamError } from '../upstream-error';
import type { JsonCall } from '../http';
import type { MalformedUsage } from '../answer-schema';
import { embeddingsUsageOf } from './schema';

/**
 * POST {base_url}/embeddings. Floats are always asked for: the route encodes base64 itself, so every provider
 * kind answers the client the same way whatever it supports.
 */
export function openAIEmbed(call: JsonCall, malformedUsage: MalformedUsage): EmbeddingProtocol['embed'] {
  return async (ep, body, opts) => {
    const answer = await call(
      ep,
      '/embeddings',
      {
        model: ep.upstreamModel,
        input: body.input,
        encoding_format: 'float',
        ...(body.dimensions !== undefined ? { dimensions: body.dimensions } : {}),
        ...(body.user !== undefined ? { user: body.user } : {}),
      },
      opts,
    );
    return readEmbeddings(answer, body.input.length, (issue) => malformedUsage(ep, issue));
  };
}

/**
 * Checks the answer before anyone is charged for it: one finite vector per input, each index once. A short or
 * garbled answer is the upstream's fault, so it fails over. Some servers answer base64 whatever was asked; that is
 * decoded here (little-endian float32, OpenAI's encoding).
 */
export function readEmbeddings(json: unknown, inputs: number, onMalformedUsage: (issue: string) => void): EmbeddingResult {
  const data = (json as { data?: unknown })?.data;
  if (!Array.isArray(data) || data.length !== inputs) {
    throw new UpstreamError('protocol', `upstream answered ${Array.isArray(data) ? data.length : 'no'} embeddings for ${inputs} inputs`);
  }
  const out: EmbeddingResult['data'] = new Array(inputs);
  for (const item of data as Array<{ index?: unknown; embedding?: unknown }>) {
    const index = item?.index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= inputs || out[index]) {
      throw new UpstreamError('protocol', `upstream answered an embedding with a bad index: ${JSON.stringify(index)}`);
    }
    const embedding = typeof item.embedding === 'string' ? fromBase64Float32(item.embedding) : item.embedding;
    if (!Array.isArray(embedding) || embedding.length === 0 || !embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      throw new UpstreamError('protocol', `upstream answered a malformed embedding at index ${index}`);
    }
    out[index] = { index, embedding };
  }
  const usage = embeddingsUsageOf(json, onMalformedUsage);
  return { data: out, ...(usage ? { usage } : {}) };
}

function fromBase64Float32(b64: string): number[] | undefined {
  const buf = Buffer.from(b64, 'base64');
  if (buf.length % 4 !== 0) return undefined;
  const out: number[] = new Array(buf.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}
