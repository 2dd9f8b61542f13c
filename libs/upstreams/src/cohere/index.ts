import type { RerankProtocol } from '../types';
// The JSON-over-HTTP client is shared with openai/ so both classify connect errors, timeouts and statuses alike.
import { createUpstreamClient } from '../http';
import { cohereRerankBody, readCohereRerank } from './translate';
import type { MalformedUsage } from '../answer-schema';

/**
 * Cohere-style rerank upstreams (`kind: cohere`): POST {base_url}/rerank with the key from `api_key_env` as a Bearer
 * token. 429 and 5xx fail over; 400 and 422 are the client's own mistake and do not (see upstream-error.ts).
 */
export function createCohereProtocol(env: NodeJS.ProcessEnv = process.env, malformedUsage: MalformedUsage = () => {}): RerankProtocol {
  const { jsonWhole } = createUpstreamClient({}, env);
  return {
    async rerank(ep, body, opts) {
      const json = await jsonWhole(ep, '/rerank', { model: ep.upstreamModel, ...cohereRerankBody(body) }, opts);
      return readCohereRerank(json, body.documents.length, (issue) => malformedUsage(ep, issue));
    },
  };
}
