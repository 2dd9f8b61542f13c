import fc from 'fast-check';
import * as oldImages from '../../../services/media/src/images/pricing';
import * as oldShape from '../../../services/media/src/images/shape';
import { audioCharge as oldAudioCharge } from '../../../services/media/src/audio-models';
import { characterCount as oldCharacterCount } from '../../../services/media/src/speech/schema';
import { billedSeconds as oldBilledSeconds } from '../../../services/media/src/transcriptions/duration';
import * as oldVideo from '../../../services/jobs/src/submit/pricing';
import * as oldText from '../../../services/text/src/text-pricing';
import { outputCap as oldOutputCap } from '../../../services/text/src/output-cap';
import { maxInputTokens as oldMaxInputTokens } from '../../../services/text/src/embeddings/input-tokens';
import { DEFAULT_MAX_TOKENS } from '../../upstreams/src/anthropic/request';
import { maxTokensOf as oldMaxTokensOf } from '../../upstreams/src/tokens';
import { charge } from '@gateway/money';
import * as p from './index';
import { audioModel, imageModel, inputModel, resolution, seconds, textModel, videoModel } from './testing/arbitraries';

/**
 * Temporary: the new module against the four files it replaces, before they go. Every function gives the very same
 * integer for the same input, so moving the callers onto @gateway/pricing changes no charge.
 */
const runs = { numRuns: 300 };
const tokens = fc.integer({ min: 0, max: 2_000_000 });

describe('@gateway/pricing against the implementations it replaces', () => {
  it('money: charge() without `per` is the old one-rounding sum', () => {
    const old = (terms: Array<[number, bigint]>) => {
      let atto = 0n;
      for (const [q, r] of terms) atto += BigInt(q) * r;
      return (atto + 10n ** 9n / 2n) / 10n ** 9n;
    };
    fc.assert(
      fc.property(fc.array(fc.tuple(tokens, fc.bigInt({ min: 0n, max: 10n ** 20n }))), (terms) => charge(terms) === old(terms)),
      runs,
    );
  });

  it('text: the output cap, the worst case and the charge', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 200 });
    fc.assert(
      fc.property(
        textModel,
        text,
        fc.integer({ min: 1, max: 50 }),
        fc.option(fc.integer({ min: 1, max: 300_000 }), { nil: undefined }),
        fc.integer({ min: 1, max: 8 }),
        tokens,
        tokens,
        (m, prompt, count, requested, choices, pt, ct) => {
          expect(p.outputCap(m, requested)).toBe(oldOutputCap(m, requested));
          expect(p.textWorstCase(m, prompt, count, requested, choices)).toBe(oldText.textWorstCase(m, prompt, count, requested, choices));
          expect(p.textWorstCase(m, prompt, count, requested)).toBe(oldText.textWorstCase(m, prompt, count, requested));
          expect(p.textCharge(m, pt, ct)).toBe(oldText.textCharge(m, pt, ct));
          expect(p.maxTokensOf(prompt)).toBe(oldMaxTokensOf(prompt));
        },
      ),
      runs,
    );
    const messages = fc.array(
      fc.record({
        content: fc.option(fc.oneof(fc.string(), fc.array(fc.record({ type: fc.string(), text: fc.string() }))), { nil: undefined }),
        tool_calls: fc.option(fc.array(fc.record({ id: fc.string() })), { nil: undefined }),
      }),
    );
    fc.assert(
      fc.property(messages, fc.option(fc.array(fc.record({ name: fc.string() })), { nil: undefined }), (msgs, tools) => {
        expect(p.promptText({ messages: msgs, tools })).toBe(oldText.promptText({ messages: msgs, tools }));
      }),
      runs,
    );
    expect(p.DEFAULT_OUTPUT_CAP).toBe(DEFAULT_MAX_TOKENS);
  });

  it('embeddings and rerank: the bound, the hold and the charge', () => {
    const strings = fc.array(fc.string({ unit: 'binary', maxLength: 100 }), { minLength: 1 });
    const arrays = fc.array(fc.array(fc.nat(100_000)), { minLength: 1 });
    fc.assert(
      fc.property(inputModel, fc.oneof(strings, arrays), tokens, (m, inputs, counted) => {
        expect(p.maxInputTokens(inputs)).toBe(oldMaxInputTokens(inputs as string[] | number[][]));
        expect(p.inputWorstCase(m, inputs)).toBe(oldText.inputCharge(m, oldMaxInputTokens(inputs as string[] | number[][])));
        expect(p.inputCharge(m, counted)).toBe(oldText.inputCharge(m, counted));
      }),
      runs,
    );
    // Rerank summed the query and each document by hand.
    fc.assert(
      fc.property(fc.string(), fc.array(fc.string()), (query, documents) => {
        expect(p.maxInputTokens([query, ...documents])).toBe(documents.reduce((n, d) => n + oldMaxTokensOf(d), oldMaxTokensOf(query)));
      }),
      runs,
    );
  });

  it('images: the shape, the rate, the hold and the charge', () => {
    const size = fc.option(fc.constantFrom('1024x1024', '1792 x 1024', '16:9', '2k', '4K', 'auto', '1.5:1', ''), { nil: undefined });
    const ratio = fc.option(fc.constantFrom('16:9', '1:1'), { nil: undefined });
    fc.assert(
      fc.property(size, ratio, resolution, (s, aspect_ratio, r) => {
        const fields = { size: s, aspect_ratio, resolution: r };
        expect(p.resolveShape(fields)).toEqual(oldShape.resolveShape(fields));
      }),
      runs,
    );
    fc.assert(
      fc.property(imageModel, fc.integer({ min: 0, max: 10 }), resolution, (m, n, r) => {
        expect(p.imageRate(m, r)).toBe(oldImages.imageRate(m, r));
        expect(p.imageWorstCase(m, n, r)).toBe(oldImages.imageWorstCase(m, n, r));
        expect(p.imageCharge(m, n, r)).toBe(oldImages.imageCharge(m, n, r));
      }),
      runs,
    );
  });

  it('audio: speech per character, transcription per started second', () => {
    fc.assert(
      fc.property(
        audioModel,
        fc.string({ unit: 'binary', maxLength: 300 }),
        fc.oneof(seconds, fc.double({ min: 0, max: 5, noNaN: true })),
        (m, input, s) => {
          expect(p.characterCount(input)).toBe(oldCharacterCount(input));
          expect(p.speechCharge(m, input)).toBe(oldAudioCharge(m, 'character', oldCharacterCount(input)));
          expect(p.billedSeconds(s)).toBe(oldBilledSeconds(s));
          expect(p.transcriptionCharge(m, s)).toBe(oldAudioCharge(m, 'second', oldBilledSeconds(s)));
        },
      ),
      runs,
    );
  });

  it('video: held seconds, the hold, the charge to the millisecond, and the seconds strings', () => {
    const duration = fc.option(seconds, { nil: undefined });
    // Rates of a few atto a second (the arbitrary's low half) have no whole-atto per-millisecond rate: no drift there either.
    fc.assert(
      fc.property(videoModel, fc.integer({ min: 1, max: 10 }), duration, fc.bigInt({ min: 0n, max: 6_000_000n }), (m, n, d, ms) => {
        expect(p.heldSeconds(m, d)).toBe(oldVideo.heldSeconds(m, d));
        expect(p.videoWorstCase(m, n, d)).toBe(oldVideo.jobWorstCase(m, n, d));
        expect(p.videoCharge(m, ms)).toBe(oldVideo.videoCharge(m, ms));
        expect(p.millisToSeconds(ms)).toBe(oldVideo.millisToSeconds(ms));
        if (d !== undefined) expect(p.secondsToMillis(d)).toBe(oldVideo.secondsToMillis(d));
      }),
      runs,
    );
    expect(p.FALLBACK_DURATION_SECONDS).toBe(oldVideo.FALLBACK_DURATION_SECONDS);
  });
});
