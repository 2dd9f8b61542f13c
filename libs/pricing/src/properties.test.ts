import { parseConfig } from '@gateway/config';
import fc from 'fast-check';
import {
  billedSeconds,
  cacheDiscount,
  characterCount,
  FRAMING_TOKENS_PER_MESSAGE,
  heldSeconds,
  imageCharge,
  imageRate,
  imageWorstCase,
  inputCharge,
  inputWorstCase,
  maxInputTokens,
  maxTokensOf,
  outputCap,
  secondsToMillis,
  speechCharge,
  textCharge,
  textWorstCase,
  transcriptionCharge,
  videoCharge,
  videoWorstCase,
} from './index';
import { audioModel, imageModel, inputModel, resolution, seconds, textModel, videoModel } from './testing/arbitraries';

/**
 * For every category: whatever a call turns out to use within what its hold was sized for, the charge never exceeds
 * the hold; and every figure is the exact sum rounded half up once, to the nano-USD. (The same properties, run
 * against the four files this module replaced, found no input where the two disagree: see this file's history.)
 */
const runs = { numRuns: 200 };
const ATTO_PER_NANO = 10n ** 9n;

/** `numerator / denominator` atto-USD to nano-USD, half up: the one rounding, written independently of @gateway/money. */
const roundHalfUp = (numerator: bigint, denominator: bigint): bigint =>
  (2n * numerator + denominator * ATTO_PER_NANO) / (2n * denominator * ATTO_PER_NANO);

/** A quantity from 0 to `max`, edges included. */
const upTo = (max: number) => fc.integer({ min: 0, max });

it('builds only models the config schema accepts (but for a text model without max_output_tokens, on purpose)', () => {
  for (const arbitrary of [textModel, inputModel, imageModel, audioModel, videoModel])
    for (const m of fc.sample(arbitrary, 25)) {
      if (m.config.category === 'text' && m.config.max_output_tokens === undefined) continue;
      expect(() => parseConfig({ providers: [{ id: 'sim', kind: 'simulated' }], models: [m.config] })).not.toThrow();
    }
});

describe('the charge never exceeds the worst case', () => {
  it('text: any prompt count within the byte bound and any completion within the cap, per choice', () => {
    const call = fc.record({
      prompt: fc.string({ unit: 'grapheme', maxLength: 200 }),
      messages: fc.integer({ min: 1, max: 20 }),
      requested: fc.option(fc.integer({ min: 1, max: 300_000 }), { nil: undefined }),
      choices: fc.integer({ min: 1, max: 8 }),
    });
    const share = fc.double({ min: 0, max: 1, noNaN: true });
    // Of the prompt used, a share read from the cache and a share of the rest written to it.
    const used = fc.record({ prompt: share, completion: share, read: share, write: share });
    fc.assert(
      fc.property(textModel, call, used, (m, c, u) => {
        const promptMax = maxTokensOf(c.prompt) + FRAMING_TOKENS_PER_MESSAGE * c.messages;
        const completionMax = outputCap(m, c.requested) * c.choices;
        const prompt = Math.floor(u.prompt * promptMax);
        const read = Math.floor(u.read * prompt);
        const write = Math.floor(u.write * (prompt - read));
        const charged = textCharge(m, prompt, Math.floor(u.completion * completionMax), { read, write });
        expect(charged).toBeLessThanOrEqual(textWorstCase(m, c.prompt, c.messages, c.requested, c.choices));
        // The hold is the dearest way the whole prompt could be served: uncached, all read, or all written.
        const charges = [{}, { read: promptMax }, { write: promptMax }].map((cache) => textCharge(m, promptMax, completionMax, cache));
        const dearest = charges.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0))[0];
        expect(dearest).toBe(textWorstCase(m, c.prompt, c.messages, c.requested, c.choices));
      }),
      runs,
    );
  });

  it('embedding and rerank: any token count within the bound of the inputs', () => {
    const inputs = fc.oneof(
      fc.array(fc.string({ maxLength: 100 }), { minLength: 1, maxLength: 10 }),
      fc.array(fc.array(fc.nat(100_000)), { minLength: 1 }),
    );
    fc.assert(
      fc.property(inputModel, inputs, fc.double({ min: 0, max: 1, noNaN: true }), (m, texts, share) => {
        const counted = Math.floor(share * maxInputTokens(texts));
        expect(inputCharge(m, counted)).toBeLessThanOrEqual(inputWorstCase(m, texts));
      }),
      runs,
    );
  });

  it('image: any number of images up to n, at any resolution or none', () => {
    fc.assert(
      fc.property(imageModel, fc.integer({ min: 1, max: 10 }), resolution, fc.double({ min: 0, max: 1, noNaN: true }), (m, n, r, share) => {
        expect(imageCharge(m, Math.floor(share * n), r)).toBeLessThanOrEqual(imageWorstCase(m, n, r));
      }),
      runs,
    );
  });

  it('speech: the worst case is the charge itself, the characters × rate', () => {
    fc.assert(
      // Emoji are one character, though two UTF-16 units.
      fc.property(audioModel, fc.string({ unit: fc.constantFrom('a', ' ', 'é', '日', '🎙', '👍🏽'), maxLength: 300 }), (m, input) => {
        expect(speechCharge(m, input)).toBe(roundHalfUp(BigInt(characterCount(input)) * m.rates.character, 1n));
      }),
      runs,
    );
  });

  it('transcription: any reported duration up to the measured one', () => {
    fc.assert(
      fc.property(audioModel, seconds, fc.double({ min: 0, max: 1, noNaN: true }), (m, measured, share) => {
        expect(transcriptionCharge(m, share * measured)).toBeLessThanOrEqual(transcriptionCharge(m, measured));
      }),
      runs,
    );
  });

  it('video: any delivered milliseconds up to the held seconds × n; the held milliseconds never fall short', () => {
    fc.assert(
      fc.property(
        videoModel,
        fc.integer({ min: 1, max: 10 }),
        fc.option(seconds, { nil: undefined }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (m, n, d, share) => {
          const heldMillis = secondsToMillis(heldSeconds(m, d));
          // secondsToMillis reads the duration to the microsecond first: it may fall short by half a microsecond at most.
          expect(Number(heldMillis)).toBeGreaterThanOrEqual(heldSeconds(m, d) * 1000 - 5e-4 - 1e-9);
          const delivered = BigInt(Math.floor(share * Number(heldMillis * BigInt(n))));
          expect(videoCharge(m, delivered)).toBeLessThanOrEqual(videoWorstCase(m, n, d));
        },
      ),
      runs,
    );
  });
});

describe('every charge is the exact sum, rounded half up once', () => {
  const tokens = fc.integer({ min: 0, max: 2_000_000 });

  it('text: prompt, completion and the flat request price, summed in atto', () => {
    fc.assert(
      fc.property(textModel, tokens, tokens, (m, p, c) => {
        const atto = BigInt(p) * m.rates.prompt + BigInt(c) * m.rates.completion + m.rates.request;
        expect(textCharge(m, p, c)).toBe(roundHalfUp(atto, 1n));
      }),
      runs,
    );
  });

  it('text with cached tokens: each share of the prompt at its rate, the config strings read independently', () => {
    /** A config rate string as atto-USD, without @gateway/money: digits shifted to 18 places. */
    const atto = (usd: string | undefined, otherwise: string) => {
      const [whole, frac = ''] = (usd ?? otherwise).split('.');
      return BigInt(whole) * 10n ** 18n + BigInt(frac.padEnd(18, '0'));
    };
    fc.assert(
      fc.property(textModel, tokens, tokens, tokens, tokens, (m, plain, read, write, c) => {
        const set = m.config.pricing;
        const prompt = atto(set.prompt, '0');
        const sum =
          BigInt(plain) * prompt +
          BigInt(read) * atto(set.input_cache_read, set.prompt ?? '0') +
          BigInt(write) * atto(set.input_cache_write, set.prompt ?? '0') +
          BigInt(c) * atto(set.completion, '0') +
          atto(set.request, '0');
        expect(textCharge(m, plain + read + write, c, { read, write })).toBe(roundHalfUp(sum, 1n));
        const full = BigInt(plain + read + write) * prompt + BigInt(c) * atto(set.completion, '0') + atto(set.request, '0');
        expect(cacheDiscount(m, plain + read + write, c, { read, write })).toBe(roundHalfUp(full, 1n) - roundHalfUp(sum, 1n));
      }),
      runs,
    );
  });

  it('embedding, rerank, image and audio: quantity × rate', () => {
    fc.assert(
      fc.property(inputModel, imageModel, audioModel, tokens, upTo(10), resolution, seconds, (im, img, am, t, n, r, s) => {
        expect(inputCharge(im, t)).toBe(roundHalfUp(BigInt(t) * im.rates.prompt, 1n));
        expect(imageCharge(img, n, r)).toBe(roundHalfUp(BigInt(n) * imageRate(img, r), 1n));
        expect(transcriptionCharge(am, s)).toBe(roundHalfUp(BigInt(billedSeconds(s)) * am.rates.second, 1n));
      }),
      runs,
    );
  });

  it('video: milliseconds of a per-second rate are exact, never a rounded per-millisecond rate', () => {
    fc.assert(
      fc.property(videoModel, fc.bigInt({ min: 0n, max: 6_000_000n }), (m, ms) => {
        const exact = roundHalfUp(ms * m.rates.second + 1000n * m.rates.request, 1000n);
        expect(videoCharge(m, ms)).toBe(exact);
        // The arithmetic of the jobs service before this module (atto floored, then rounded): the same integer.
        const before = ((ms * m.rates.second) / 1000n + m.rates.request + ATTO_PER_NANO / 2n) / ATTO_PER_NANO;
        expect(videoCharge(m, ms)).toBe(before);
      }),
      runs,
    );
  });
});
