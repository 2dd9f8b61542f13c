import { contextOf, validate, sendJson, type PostRoutes } from '@gateway/service-kit';
import { countTokensOfAll, type RerankProtocol } from '@gateway/upstreams';
import { reportedTokens, runInputBilled, type InputBilledDeps } from '../input-flow/run-input-billed';
import { ranked } from './ranking';
import { documentTexts, rerankBody } from './schema';

/** POST /v1/rerank: the contract's shape, `id` the gateway request id, the exact charge as `usage.cost`. */
export function mountRerank(r: PostRoutes, deps: InputBilledDeps<RerankProtocol>): void {
  r.post('/v1/rerank', async (req, res) => {
    const body = validate(rerankBody, req.body);
    const documents = documentTexts(body.documents);
    // A top_n beyond the list means "all of them", not an error.
    const topN = Math.min(body.top_n ?? documents.length, documents.length);
    const { result, model, tokens, cost, requestId } = await runInputBilled(contextOf(req), deps, {
      category: 'rerank',
      slug: body.model,
      route: '/v1/rerank',
      provider: body.provider,
      maxCost: body.max_cost,
      // The query counts once, not once per document: that is what the caller sent.
      inputs: [body.query, ...documents],
      attempt: async (p, ep, opts) => {
        const answer = await p.rerank(ep, { query: body.query, documents, top_n: topN }, opts);
        return { ...answer, results: ranked(answer.results, documents.length, topN) };
      },
      inputTokens: async (r) => {
        const reported = reportedTokens(r.usage?.total_tokens);
        return reported ?? countTokensOfAll([body.query, ...documents]);
      },
    });
    sendJson(res, {
      id: requestId,
      model: model.config.id,
      results: result.results.map((x) => ({
        index: x.index,
        relevance_score: x.relevance_score,
        ...(body.return_documents ? { document: { text: documents[x.index] } } : {}),
      })),
      usage: { total_tokens: tokens, cost },
    });
  });
}
