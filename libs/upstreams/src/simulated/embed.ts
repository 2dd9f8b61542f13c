import crypto from 'node:crypto';
import type { EmbeddingProtocol } from '../types';
import { UpstreamError } from '../upstream-error';

const DEFAULT_DIMENSIONS = 16;
/** A real provider refuses sizes its model does not have; this bounds the work one request can ask for. */
const MAX_DIMENSIONS = 4096;

/**
 * A unit vector seeded by the text: SHA-256 in counter mode gives the components, so the same input always maps to
 * the same vector, and a shorter `dimensions` is a prefix of the longer vector renormalised (the way
 * text-embedding-3 truncates).
 */
export function simulatedVector(seed: string, dimensions: number): number[] {
  const raw: number[] = new Array(dimensions);
  let block = Buffer.alloc(0);
  for (let i = 0; i < dimensions; i++) {
    if (i % 8 === 0)
      block = crypto
        .createHash('sha256')
        .update(`${seed}\u0000${i / 8}`)
        .digest();
    raw[i] = block.readUInt32LE((i % 8) * 4) / 2 ** 31 - 1;
  }
  const norm = Math.sqrt(raw.reduce((s, x) => s + x * x, 0)) || 1;
  return raw.map((x) => x / norm);
}

/** Like the simulated chat, a "token" is a whitespace-separated word; every input costs at least one. */
function simulatedTokens(input: string | number[]): number {
  return Math.max(1, typeof input === 'string' ? input.split(/\s+/).filter(Boolean).length : input.length);
}

export const simulatedEmbed: EmbeddingProtocol['embed'] = async (ep, body) => {
  const dimensions = body.dimensions ?? DEFAULT_DIMENSIONS;
  if (dimensions > MAX_DIMENSIONS) throw new UpstreamError('status', `simulated models have at most ${MAX_DIMENSIONS} dimensions`, 400);
  const inputs: Array<string | number[]> = body.input;
  return {
    data: inputs.map((input, index) => ({ index, embedding: simulatedVector(`${ep.upstreamModel}\u0000${JSON.stringify(input)}`, dimensions) })),
    usage: { prompt_tokens: inputs.reduce((n, input) => n + simulatedTokens(input), 0) },
  };
};
