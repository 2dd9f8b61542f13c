import crypto from 'node:crypto';
import type { ImageProtocol } from '../types';
import { solidPng } from './png';

/** Every simulated image is this square, whatever size was asked for: small enough to answer at once, offline. */
export const SIMULATED_IMAGE_SIDE = 64;

/** `n` PNGs, each one colour seeded by the model, the prompt and its position: the same call draws the same images. */
export const simulatedImages: ImageProtocol['generateImages'] = async (ep, req) => ({
  images: Array.from({ length: req.n }, (_, i) => {
    const seed = crypto.createHash('sha256').update(`${ep.upstreamModel}\u0000${req.prompt}\u0000${i}`).digest();
    return {
      kind: 'bytes' as const,
      bytes: solidPng(SIMULATED_IMAGE_SIDE, SIMULATED_IMAGE_SIDE, [seed[0], seed[1], seed[2]]),
      contentType: 'image/png',
    };
  }),
});
