import { contextOf, validate, sendJson, type PostRoutes } from '@gateway/service-kit';
import type { EmbeddingProtocol } from '@gateway/upstreams';
import { float32Base64 } from './base64';
import { countedInputTokens } from '../input-flow/input-tokens';
import { reportedTokens, runInputBilled, type InputBilledDeps } from '../input-flow/run-input-billed';
import { embeddingsBody, inputsOf } from './schema';

/** POST /v1/embeddings: the OpenAI shape, with the gateway's slug and the exact charge as `usage.cost`. */
export function mountEmbeddings(r: PostRoutes, deps: InputBilledDeps<EmbeddingProtocol>): void {
  r.post('/v1/embeddings', async (req, res) => {
    const body = validate(embeddingsBody, req.body);
    const input = inputsOf(body.input);
    const { result, model, tokens, cost } = await runInputBilled(contextOf(req), deps, {
      category: 'embedding',
      slug: body.model,
      route: '/v1/embeddings',
      provider: body.provider,
      maxCost: body.max_cost,
      inputs: input,
      attempt: (p, ep, opts) => p.embed(ep, { input, dimensions: body.dimensions, user: body.user }, opts),
      inputTokens: async (r) => reportedTokens(r.usage?.prompt_tokens) ?? (await countedInputTokens(input)),
    });
    const encode = body.encoding_format === 'base64' ? float32Base64 : (v: number[]) => v;
    sendJson(res, {
      object: 'list',
      model: model.config.id,
      data: result.data.map((d) => ({ object: 'embedding', index: d.index, embedding: encode(d.embedding) })),
      usage: { prompt_tokens: tokens, total_tokens: tokens, cost },
    });
  });
}
