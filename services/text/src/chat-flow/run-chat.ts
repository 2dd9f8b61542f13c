import type { Response } from 'express';
import type { ProviderConfig, ProviderPreferences, ResolvedModel } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import type { RequestContext } from '@gateway/service-kit';
import { PaidCall, checkpointEveryMs, guarded, type SpendDeps } from '@gateway/spend';
import { promptText, textWorstCase } from '@gateway/pricing';
import { countTokens, warmTokenizer, type ChatChunk, type ChatCompletion, type TextProtocol } from '@gateway/upstreams';
import { requestedCap, withOutputCap } from '../output-cap';
import { choicesOf, endAtLimit, type TextCap, textCapOf } from './cost-cap';
import { generatedText } from './generated-text';
import { withSseClient, type StreamClient } from './stream-client';
import { chargeOf, countedFigures, discountOf, figuresOf, sumFigures, type TokenFigures } from './token-details';

export interface TextDeps extends SpendDeps {
  protocolOf(kind: ProviderConfig['kind']): TextProtocol | undefined;
}

/** A chat-completions body as the upstream receives it, whatever shape the client used. */
export interface ChatCall {
  /** The requested model, then its fallbacks. */
  slugs: string[];
  /**
   * Sent upstream as is, but for its output limit: the hold and the upstream both take it from the body's limit
   * fields, capped by the model (output-cap.ts, outputCap in @gateway/pricing). The protocol module sets the upstream model.
   */
  body: Record<string, unknown> & { messages: Array<{ role: string; content?: unknown }> };
  stream: boolean;
  /** The client's provider preferences: which endpoints may serve, in which order. */
  provider?: ProviderPreferences;
  /** The client's `max_cost` in nano-USD: the hold, the output limit and a stream's end stay within it (cost-cap.ts). */
  maxCost?: bigint;
}

export interface ChatUsageFigures {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Of prompt_tokens: read from the upstream's prompt cache, and written to it (then only when some were). */
  prompt_tokens_details?: { cached_tokens: number; cache_write_tokens?: number; [k: string]: unknown };
  /** Of completion_tokens: reasoning. */
  completion_tokens_details?: { reasoning_tokens: number; [k: string]: unknown };
  /** The exact charge, a decimal string. */
  cost: string;
}

/** The figures every route shapes its usage from: the upstream's own details first, the billed figures over them. */
function usageFigures(t: TokenFigures, cost: string): ChatUsageFigures {
  return {
    prompt_tokens: t.prompt,
    completion_tokens: t.completion,
    total_tokens: t.prompt + t.completion,
    prompt_tokens_details: { ...t.promptDetails, cached_tokens: t.cacheRead, ...(t.cacheWrite ? { cache_write_tokens: t.cacheWrite } : {}) },
    completion_tokens_details: { ...t.completionDetails, reasoning_tokens: t.reasoning },
    cost,
  };
}

/** The settle's figures: the charge, the token counts, and the parts the record and the stats keep apart. */
function settlement(model: ResolvedModel, t: TokenFigures, charge = chargeOf(model, t)) {
  return {
    chargeNano: charge,
    tokensPrompt: t.prompt,
    tokensCompletion: t.completion,
    tokensCached: t.cacheRead,
    tokensReasoning: t.reasoning,
    cacheDiscountNano: discountOf(model, t),
  };
}

export interface ChatOutcome {
  completion: ChatCompletion;
  model: ResolvedModel;
  usage: ChatUsageFigures;
  requestId: string;
}

/** How one route frames a stream: the chat passthrough, the message API's events, the responses events... */
export interface StreamSink {
  /** The upstream answered; the route writes its opening frames. */
  start(model: ResolvedModel, requestId: string): void;
  chunk(chunk: ChatChunk): void;
  /** The answer is complete and settled. */
  finish(usage: ChatUsageFigures, finishReason: string | null): void;
  /** The stream broke after its first byte: the route writes its error event and its end marker. */
  fail(error: GatewayError): void;
}

function protocol(deps: TextDeps, kind: ProviderConfig['kind']): TextProtocol {
  const p = deps.protocolOf(kind);
  // A provider kind without a text protocol fails over like any broken endpoint.
  if (!p) throw new Error(`provider kind ${kind} cannot serve text`);
  return p;
}

/**
 * Resolves and holds for one or several chat calls of one request: the hold is the sum of their worst cases, or the
 * client's `max_cost` when that is less; `cap` says what the cap leaves each model to write.
 */
async function begin(
  ctx: RequestContext,
  deps: TextDeps,
  slugs: string[],
  bodies: ChatCall['body'][],
  streamed: boolean,
  provider: ProviderPreferences | undefined,
  maxCost: bigint | undefined,
): Promise<{ paid: PaidCall; cap: TextCap | undefined }> {
  // `n` choices may each run to the output cap, so the worst case counts every one of them.
  const prompts = bodies.map((b) => ({
    text: promptText(b),
    count: b.messages.length,
    requested: requestedCap(b),
    choices: choicesOf(b),
  }));
  const cap = await textCapOf(bodies, maxCost);
  const paid = await PaidCall.begin(deps, {
    ctx,
    category: 'text',
    slugs,
    streamed,
    provider,
    worstCase: (m) => prompts.reduce((sum, p) => sum + textWorstCase(m, p.text, p.count, p.requested, p.choices), 0n),
    maxCostNano: maxCost,
    leastCost: cap?.least,
  });
  return { paid, cap };
}

/** The non-streamed chat flow every text route shares: hold, call with failover, settle. */
export async function completeChat(ctx: RequestContext, deps: TextDeps, call: ChatCall): Promise<ChatOutcome> {
  const { outcomes } = await completeChats(ctx, deps, call.slugs, [call.body], call.provider, call.maxCost);
  return outcomes[0];
}

/**
 * Several upstream calls under one hold and one charge (a batch of prompts): the hold is the sum of the worst
 * cases, each call fails over on its own, and the request settles once at the sum of the actual charges.
 * All or nothing: if any prompt fails, even after earlier ones answered, the client gets an error and no answer,
 * so the whole hold is released and nothing is charged (the answered prompts' cost is the gateway's loss).
 */
export async function completeChats(
  ctx: RequestContext,
  deps: TextDeps,
  slugs: string[],
  bodies: ChatCall['body'][],
  provider?: ProviderPreferences,
  maxCost?: bigint,
): Promise<{ outcomes: ChatOutcome[]; total: ChatUsageFigures }> {
  const { paid, cap } = await begin(ctx, deps, slugs, bodies, false, provider, maxCost);
  const { requestId } = ctx;
  return guarded(paid, async () => {
    const answers: Array<{ result: ChatCompletion; model: ResolvedModel; t: TokenFigures; charge: bigint; discount: bigint }> = [];
    for (const body of bodies) {
      const { result, model } = await paid.call((m, ep) =>
        protocol(deps, ep.provider.kind).chat(ep, withOutputCap(m, { ...body, stream: false }, cap?.outputLimit(m)), {
          requestId,
          maxOutputTokens: m.config.max_output_tokens,
        }),
      );
      const t = result.usage
        ? figuresOf(result.usage)
        : countedFigures(await countTokens(promptText(body)), await countTokens(result.choices.map((c) => generatedText(c.message)).join('')));
      answers.push({ result, model, t, charge: chargeOf(model, t), discount: discountOf(model, t) });
    }
    // One answer keeps the upstream's own details; a batch sums the figures.
    const t = answers.length === 1 ? answers[0].t : sumFigures(answers.map((a) => a.t));
    // The callers write the answer in this turn; the close follows it onto the bus (settleAfterAnswer).
    const cost = await paid.settleAfterAnswer({
      ...settlement(
        answers[0].model,
        t,
        answers.reduce((n, a) => n + a.charge, 0n),
      ),
      cacheDiscountNano: answers.reduce((n, a) => n + a.discount, 0n),
      finishReason: answers[answers.length - 1].result.choices[0]?.finish_reason ?? null,
    });
    const total = usageFigures(t, cost);
    const outcomes = answers.map((a) => ({ completion: a.result, model: a.model, requestId, usage: total }));
    return { outcomes, total };
  });
}

/** The streamed chat flow on an Express response: the response's close is the client leaving. */
export function streamChat(ctx: RequestContext, res: Response, deps: TextDeps, call: ChatCall, sink: StreamSink): Promise<void> {
  return withSseClient(res, (client) => runChatStream(ctx, client, deps, call, sink));
}

/** How long before a stream's first checkpoint its token counter starts loading (runChatStream). */
const TOKENIZER_LOAD_LEAD_MS = 2_500;

/**
 * The streamed chat flow. The first chunk is pulled inside the failover loop, so an upstream that accepts and then
 * dies before saying anything still hands over to the next endpoint, and the client gets a JSON error with a real
 * status if all fail. After the first byte, a failure goes to the sink's error frame. Billing: the upstream's
 * usage when it reports it; on a break, the prompt plus the delivered tokens of every kind, reasoning included
 * (counted); nothing if none was delivered.
 */
export async function runChatStream(ctx: RequestContext, client: StreamClient, deps: TextDeps, call: ChatCall, sink: StreamSink): Promise<void> {
  const { paid, cap } = await begin(ctx, deps, call.slugs, [call.body], true, call.provider, call.maxCost);
  const { requestId } = ctx;
  const { result, model } = await guarded(paid, () =>
    paid.call(async (m, ep) => {
      const chunks = await protocol(deps, ep.provider.kind).chatStream(ep, withOutputCap(m, { ...call.body, stream: true }, cap?.outputLimit(m)), {
        signal: client.signal,
        requestId,
        maxOutputTokens: m.config.max_output_tokens,
      });
      const iterator = chunks[Symbol.asyncIterator]();
      return { iterator, first: await iterator.next() };
    }, client.signal),
  );
  paid.markFirstByte();
  client.open();
  sink.start(model, requestId);
  // Its checkpoints count what it delivered, and the encoder takes over a second to load on first use: it starts
  // loading this long before the first checkpoint is due, so that checkpoint is not late by the load, while a stream
  // that ends sooner with the upstream's own usage (most do) never loads the encoder's ~150 MiB.
  const warming = setTimeout(warmTokenizer, Math.max(0, checkpointEveryMs(deps) - TOKENIZER_LOAD_LEAD_MS));
  warming.unref();
  try {
    await deliver(client, call, sink, paid, cap, result, model);
  } finally {
    clearTimeout(warming);
  }
}

/** The stream after its first chunk: frames, checkpoints, then the settle, or the partial charge of a break. */
async function deliver(
  client: StreamClient,
  call: ChatCall,
  sink: StreamSink,
  paid: PaidCall,
  cap: TextCap | undefined,
  result: { iterator: AsyncIterator<ChatChunk>; first: IteratorResult<ChatChunk> },
  model: ResolvedModel,
): Promise<void> {
  let delivered = '';
  let finishReason: string | null = null;
  let reported: ChatChunk['usage'];
  // Counted once however often it is asked for: by each checkpoint, and by the settle.
  let promptTokens: Promise<number> | undefined;
  const countPrompt = () => {
    promptTokens ??= countTokens(promptText(call.body));
    return promptTokens;
  };
  // What the stream has delivered so far, charged as a broken stream is: what a break settles, what a kill leaves.
  const soFar = async () => {
    const prompt = await countPrompt();
    const completion = await countTokens(delivered);
    return { ...settlement(model, countedFigures(prompt, completion)), finishReason: 'error' };
  };
  // Under a client's max_cost the stream ends at the limit the cap affords, even from an upstream that ignores it.
  const guard = cap?.streamGuard(model, call.body);
  let capped: ChatChunk | undefined;
  try {
    for (let step = result.first; !step.done; step = await result.iterator.next()) {
      const chunk = step.value;
      if (guard && !(await guard.admits(delivered, chunk.choices.map((c) => generatedText(c.delta)).join('')))) {
        capped = chunk;
        break;
      }
      for (const c of chunk.choices) {
        delivered += generatedText(c.delta);
        if (c.finish_reason) finishReason = c.finish_reason;
      }
      if (chunk.usage) reported = chunk.usage;
      if (chunk.choices.length > 0) {
        sink.chunk(chunk);
        paid.progress(soFar);
      }
    }
  } catch (e) {
    const partial = await soFar();
    if (partial.tokensCompletion === 0) await paid.release('upstream_unavailable');
    else await paid.settlePartial(partial, 'upstream_unavailable');
    const why = client.signal.aborted ? 'the client closed the stream' : (e as Error).message;
    if (client.writable()) {
      sink.fail(e instanceof GatewayError ? e : new GatewayError('upstream_unavailable', `The upstream stream broke: ${why}`));
      client.end();
    }
    return;
  }

  if (capped) {
    // Hang up on the upstream (the rest of its answer is drained, not paid for) and end as a limit ends a stream.
    result.iterator.return?.(undefined).catch(() => undefined);
    finishReason = 'length';
    sink.chunk(endAtLimit(capped, choicesOf(call.body)));
  }
  // A stream the cap ended never got the upstream's usage: what it delivered is counted, as for a break.
  const t = reported && !capped ? figuresOf(reported) : countedFigures(await countPrompt(), await countTokens(delivered));
  const cost = await paid.settle({ ...settlement(model, t), finishReason });
  sink.finish(usageFigures(t, cost), finishReason);
  client.end();
}
