import type { Request, Response, Router } from 'express';
import { GatewayError, errorEnvelope } from '@gateway/errors';
import { contextOf, validate } from '@gateway/service-kit';
import { PaidCall, type SpendDeps } from '@gateway/spend';
import { countTokens, type ChatChunk, type TextProtocol, type ChatCompletion } from '@gateway/upstreams';
import type { ProviderConfig } from '@gateway/config';
import { chatCompletionBody, upstreamBody, type ChatCompletionBody } from './schema';
import { promptText, textCharge, textWorstCase } from '../text-pricing';

export interface TextDeps extends SpendDeps {
  protocolOf(kind: ProviderConfig['kind']): TextProtocol | undefined;
}

/** POST /v1/chat/completions, streamed and not. */
export function mountChatCompletions(r: Router, deps: TextDeps): void {
  r.post('/v1/chat/completions', async (req, res) => {
    const body = validate(chatCompletionBody, req.body);
    const ctx = contextOf(req);
    const maxTokens = body.max_tokens ?? body.max_completion_tokens;
    const prompt = promptText(body.messages);
    const call = await PaidCall.begin(deps, {
      ctx,
      category: 'text',
      slugs: [body.model, ...(body.models ?? [])],
      streamed: body.stream === true,
      worstCase: (m) => textWorstCase(m, prompt, body.messages.length, maxTokens),
    });
    try {
      if (body.stream) await stream(req, res, deps, call, body, prompt);
      else await complete(req, res, deps, call, body, prompt);
    } catch (e) {
      // Whatever went wrong after the hold, it must not stay reserved; release is a no-op once settled.
      await call.release(e instanceof GatewayError ? e.code : 'upstream_unavailable');
      throw e;
    }
  });
}

function protocol(deps: TextDeps, kind: ProviderConfig['kind']): TextProtocol {
  const p = deps.protocolOf(kind);
  // A provider kind without a text protocol fails over like any broken endpoint.
  if (!p) throw new Error(`provider kind ${kind} cannot serve text`);
  return p;
}

async function complete(req: Request, res: Response, deps: TextDeps, call: PaidCall, body: ChatCompletionBody, prompt: string) {
  const controller = new AbortController();
  const requestId = contextOf(req).requestId;
  const { result, model } = await call.call((_m, ep) =>
    protocol(deps, ep.provider.kind).chat(ep, upstreamBody(body), { signal: controller.signal, requestId }),
  );
  const usage = result.usage ?? { prompt_tokens: countTokens(prompt), completion_tokens: countTokens(contentOf(result)) };
  const cost = await call.settle({
    chargeNano: textCharge(model, usage.prompt_tokens, usage.completion_tokens),
    tokensPrompt: usage.prompt_tokens,
    tokensCompletion: usage.completion_tokens,
    finishReason: result.choices[0]?.finish_reason ?? null,
  });
  res.json({
    ...result,
    id: requestId,
    object: 'chat.completion',
    model: model.config.id,
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens, cost },
  });
}

function contentOf(c: ChatCompletion): string {
  return c.choices.map((ch) => (typeof ch.message?.content === 'string' ? ch.message.content : '')).join('');
}

/**
 * Streams chunks as they arrive. The first chunk is pulled inside the failover loop, so an upstream that
 * accepts and then dies before saying anything still hands over to the next endpoint, and the client gets
 * a JSON error with a real status if all fail. After the first byte, a failure is an error frame then [DONE].
 */
async function stream(req: Request, res: Response, deps: TextDeps, call: PaidCall, body: ChatCompletionBody, prompt: string) {
  const controller = new AbortController();
  const clientGone = () => controller.abort();
  res.on('close', clientGone);
  const requestId = contextOf(req).requestId;

  const { result, model } = await call.call(async (_m, ep) => {
    const chunks = await protocol(deps, ep.provider.kind).chatStream(ep, upstreamBody(body), { signal: controller.signal, requestId });
    const iterator = chunks[Symbol.asyncIterator]();
    const first = await iterator.next();
    return { iterator, first };
  });
  call.markFirstByte();

  res.status(200);
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-cache');
  res.setHeader('x-accel-buffering', 'no');
  res.flushHeaders();

  let delivered = '';
  let finishReason: string | null = null;
  let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
  const send = (chunk: ChatChunk) => {
    for (const c of chunk.choices) {
      if (typeof c.delta?.content === 'string') delivered += c.delta.content;
      if (c.finish_reason) finishReason = c.finish_reason;
    }
    if (chunk.usage) {
      usage = chunk.usage;
      return; // re-sent at the end with the gateway's cost
    }
    res.write(`data: ${JSON.stringify({ ...chunk, id: requestId, model: model.config.id })}\n\n`);
  };

  try {
    let step = result.first;
    while (!step.done) {
      send(step.value);
      step = await result.iterator.next();
    }
  } catch (e) {
    const err = controller.signal.aborted ? new GatewayError('upstream_unavailable', 'client closed the stream') : e;
    await endBroken(res, call, model, prompt, delivered, requestId, err);
    return;
  } finally {
    res.off('close', clientGone);
  }

  const u = usage ?? { prompt_tokens: countTokens(prompt), completion_tokens: countTokens(delivered) };
  const cost = await call.settle({
    chargeNano: textCharge(model, u.prompt_tokens, u.completion_tokens),
    tokensPrompt: u.prompt_tokens,
    tokensCompletion: u.completion_tokens,
    finishReason,
  });
  res.write(
    `data: ${JSON.stringify({
      id: requestId, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: model.config.id, choices: [],
      usage: { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.prompt_tokens + u.completion_tokens, cost },
    })}\n\n`,
  );
  res.end('data: [DONE]\n\n');
}

/** A stream that broke after its first byte: charge what was delivered (nothing, if nothing was), then end it properly. */
async function endBroken(
  res: Response, call: PaidCall, model: Parameters<typeof textCharge>[0], prompt: string, delivered: string, requestId: string, err: unknown,
) {
  const completion = countTokens(delivered);
  if (completion === 0) await call.release('upstream_unavailable');
  else {
    const promptTokens = countTokens(prompt);
    await call.settlePartial({ chargeNano: textCharge(model, promptTokens, completion), tokensPrompt: promptTokens, tokensCompletion: completion, finishReason: 'error' }, 'upstream_unavailable');
  }
  const ge = err instanceof GatewayError ? err : new GatewayError('upstream_unavailable', `The upstream stream broke: ${(err as Error).message}`);
  if (!res.writableEnded && !res.destroyed) {
    res.write(`data: ${JSON.stringify(errorEnvelope(ge, requestId))}\n\n`);
    res.end('data: [DONE]\n\n');
  }
}
