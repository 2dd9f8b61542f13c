import { exactRoutes, jsonBody, type ExactRoutes } from '@gateway/service-kit';
import { replayable, type ReplayPort, type SpendDeps } from '@gateway/spend';
import { createProtocols } from '@gateway/upstreams';
import { mountChatCompletions } from './chat-completions/handler';
import { mountCompletions } from './completions/handler';
import { mountMessages } from './messages/handler';
import { mountEmbeddings } from './embeddings/handler';
import { mountRerank } from './rerank/handler';
import { mountResponses } from './responses/handler';

export interface TextService {
  /** Keyed text routes under /v1, every one a fixed path. */
  router: ExactRoutes;
}

/**
 * Every text route shares one money flow (chat-flow/run-chat.ts); each folder is one route family. Every one is
 * replayable: a keyed call that finished is answered from billing's record, never run twice (libs/spend replayable.ts).
 */
export function createTextService(deps: SpendDeps & { replays: ReplayPort }, opts: { maxRequestBody: string }): TextService {
  const routes = exactRoutes(jsonBody(opts.maxRequestBody));
  const router = replayable(routes, deps);
  const protocols = createProtocols(deps);
  deps.metrics?.gauge('gateway_circuit_open', 'Endpoints whose circuit is open (1) or half-open (0.5)', ['endpoint'], () =>
    deps.circuits
      .snapshot()
      .filter((c) => c.state !== 'closed')
      .map((c) => [{ endpoint: c.endpoint }, c.state === 'open' ? 1 : 0.5]),
  );
  const textDeps = { ...deps, protocolOf: protocols.text };
  mountChatCompletions(router, textDeps);
  mountCompletions(router, textDeps);
  mountMessages(router, textDeps);
  mountResponses(router, textDeps);
  mountEmbeddings(router, { ...deps, protocolOf: protocols.embedding });
  mountRerank(router, { ...deps, protocolOf: protocols.rerank });
  return { router: routes };
}
