import type { ResolvedModel } from '@gateway/config';
import { affordableOutput, FRAMING_TOKENS_PER_MESSAGE, outputCap, promptText, textLeastCost, type TextLoad } from '@gateway/pricing';
import { type ChatChunk, countTokens } from '@gateway/upstreams';
import { requestedCap } from '../output-cap';

type Body = Record<string, unknown> & { messages: Array<{ content?: unknown }> };

/** What a `max_cost` means for the chat calls of one request, on whichever model answers (each has its prices). */
export interface TextCap {
  /** The least the request can cost on `model`: PaidCallSpec.leastCost. */
  least(model: ResolvedModel): bigint;
  /** The output tokens per choice the cap affords on `model`; undefined when output is free. */
  outputLimit(model: ResolvedModel): number | undefined;
  /**
   * The guard of a stream answered by `model`, when the cap is what limits it (tighter than the client's limit and
   * the model's): it ends the stream at the limit even if the upstream ignores the one it was sent.
   */
  streamGuard(model: ResolvedModel, body: Body): OutputGuard | undefined;
}

/** The choices a chat body asks for (`n`), each of which may write up to the output limit. */
export const choicesOf = (body: Record<string, unknown>) => (typeof body.n === 'number' ? body.n : 1);

/** The last chunk of a stream the cap ended: every choice finishes with `length`, as at a limit the upstream kept. */
export function endAtLimit(like: ChatChunk, choices: number): ChatChunk {
  const { usage: _usage, ...rest } = like;
  return { ...rest, choices: Array.from({ length: choices }, (_, index) => ({ index, delta: {}, finish_reason: 'length' })) };
}

/**
 * Reckons a capped request's prompt once, before the hold: its tokens as the gateway counts them (o200k, the count
 * a stream's charge uses too), each message's framing on top. The byte bound the hold uses would be safe but about
 * four times too dear for the cap, refusing calls that fit. An upstream that counts more (another tokenizer) can
 * make the charge pass the cap: the close clamps it to the hold, which is the cap, and the gateway absorbs the rest.
 */
export async function textCapOf(bodies: Body[], maxCostNano: bigint | undefined): Promise<TextCap | undefined> {
  if (maxCostNano === undefined) return undefined;
  const counts = await Promise.all(bodies.map((b) => countTokens(promptText(b))));
  const load: TextLoad = {
    promptTokens: counts.reduce((n, c, i) => n + c + FRAMING_TOKENS_PER_MESSAGE * bodies[i].messages.length, 0),
    choices: bodies.reduce((n, b) => n + choicesOf(b), 0),
    calls: bodies.length,
  };
  const outputLimit = (model: ResolvedModel) => affordableOutput(model, load, maxCostNano);
  return {
    least: (model) => textLeastCost(model, load),
    outputLimit,
    streamGuard(model, body) {
      const limit = outputLimit(model);
      if (limit === undefined || limit >= outputCap(model, requestedCap(body))) return undefined;
      return new OutputGuard(limit * choicesOf(body));
    },
  };
}

/**
 * Counts what a stream delivers against its output limit, as cheaply as it can: a token is at least one byte, so
 * nothing is counted until the bytes pass the limit; then the text so far once, and each later piece on its own
 * (a piece counted apart loses the merges across its edges, so the sum errs on the side of stopping early).
 */
export class OutputGuard {
  private bytes = 0;
  private tokens: number | undefined;

  constructor(readonly limit: number) {}

  /** Whether `piece`, after `delivered`, still fits; a piece that does not is never sent. */
  async admits(delivered: string, piece: string): Promise<boolean> {
    if (this.tokens === undefined) {
      this.bytes += Buffer.byteLength(piece, 'utf8');
      if (this.bytes <= this.limit) return true;
      this.tokens = await countTokens(delivered + piece);
    } else this.tokens += await countTokens(piece);
    return this.tokens <= this.limit;
  }
}
