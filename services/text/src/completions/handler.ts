import { GatewayError, errorEnvelope } from '@gateway/errors';
import { contextOf, validate, sendJson, type PostRoutes } from '@gateway/service-kit';
import { chatCallOf } from '../chat-flow/chat-call';
import { completeChats, streamChat, type TextDeps } from '../chat-flow/run-chat';
import { sendData } from '../chat-flow/sse';
import { UNSUPPORTED, chatBodyFor, completionBody } from './schema';

const created = () => Math.floor(Date.now() / 1000);

/**
 * POST /v1/completions: each prompt is wrapped as one user message and sent as its own chat call; the replies are
 * unwrapped to `text`, one choice per prompt in order, under one hold and one charge.
 */
export function mountCompletions(r: PostRoutes, deps: TextDeps): void {
  r.post('/v1/completions', async (req, res) => {
    const body = validate(completionBody, req.body);
    const refused = UNSUPPORTED.filter((f) => body[f] !== undefined && body[f] !== null && body[f] !== false && body[f] !== 0);
    if (refused.length)
      throw new GatewayError('invalid_request', `Invalid request: ${refused.join(', ')} ${refused.length > 1 ? 'are' : 'is'} not supported`);
    const prompts = typeof body.prompt === 'string' ? [body.prompt] : body.prompt;
    const slugs = [body.model, ...(body.models ?? [])];

    if (!body.stream) {
      const { outcomes, total } = await completeChats(
        contextOf(req),
        deps,
        slugs,
        prompts.map((p) => chatBodyFor(body, p)),
        body.provider,
        body.max_cost,
      );
      sendJson(res, {
        id: outcomes[0].requestId,
        object: 'text_completion',
        created: created(),
        model: outcomes[outcomes.length - 1].model.config.id,
        choices: outcomes.map((o, index) => ({
          index,
          text: typeof o.completion.choices[0]?.message?.content === 'string' ? o.completion.choices[0].message.content : '',
          finish_reason: o.completion.choices[0]?.finish_reason ?? null,
          logprobs: null,
        })),
        usage: total,
      });
      return;
    }

    if (prompts.length > 1)
      throw new GatewayError('invalid_request', 'Invalid request: stream supports a single prompt; send the prompts as separate requests');
    let id = '';
    let slug = '';
    await streamChat(contextOf(req), res, deps, chatCallOf(body, chatBodyFor(body, prompts[0]), body.models), {
      start(model, requestId) {
        id = requestId;
        slug = model.config.id;
      },
      chunk(chunk) {
        for (const c of chunk.choices) {
          if (typeof c.delta?.content !== 'string' && !c.finish_reason) continue;
          sendData(res, {
            id,
            object: 'text_completion',
            created: created(),
            model: slug,
            choices: [{ index: 0, text: c.delta?.content ?? '', finish_reason: c.finish_reason ?? null, logprobs: null }],
          });
        }
      },
      finish(usage) {
        sendData(res, { id, object: 'text_completion', created: created(), model: slug, choices: [], usage });
        sendData(res, '[DONE]');
      },
      fail(error) {
        sendData(res, errorEnvelope(error, id));
        sendData(res, '[DONE]');
      },
    });
  });
}
