import crypto from 'node:crypto';
import { startFakeServer, type FakeUpstream } from './fake-server';
import { malformedCountOf } from './malformed-usage';

/**
 * A local Cohere-style rerank upstream (POST /v1/rerank, the real request and answer shapes). Behaviour is chosen by
 * the upstream model name, so one config can point endpoints at healthy, failing and slow "providers":
 *   ok            scores each document by the share of the query's words it contains; answers in relevance
 *                 order (ties in request order), honours top_n, reports only meta.billed_units.search_units
 *   tokens-<n>    as ok, and reports meta.tokens.input_tokens = n
 *   unsorted      as ok, but answers every document in request order, ignoring top_n
 *   status-<code> answers that HTTP status with a Cohere-style error body ({message})
 *   slow-<ms>     waits that long before the response head, then answers as ok
 *   bad-usage-<kind>  as ok, with meta.billed_units.search_units and meta.tokens.input_tokens malformed as
 *                 support/malformed-usage.ts names it
 * A request without `Authorization: Bearer <key>` answers 401, as Cohere does.
 */
export type FakeCohere = FakeUpstream;

const words = (s: string) => new Set(s.toLowerCase().match(/[a-z0-9]+/g) ?? []);

export function fakeScore(query: string, document: string): number {
  const q = words(query);
  const d = words(document);
  if (q.size === 0) return 0;
  let shared = 0;
  for (const w of q) if (d.has(w)) shared++;
  return shared / q.size;
}

export function startFakeCohere(): Promise<FakeCohere> {
  return startFakeServer(async (req, res, { model, body }) => {
    const answer = (status: number, json: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(json));
    };
    if (req.url !== '/v1/rerank') return answer(404, { message: 'not found' });
    if (!/^Bearer \S+$/.test(req.headers.authorization ?? '')) return answer(401, { message: 'invalid api token' });

    const status = /^status-(\d+)$/.exec(model);
    if (status) return answer(Number(status[1]), { message: `fake cohere says ${status[1]}` });
    const slow = /^slow-(\d+)$/.exec(model);
    if (slow) await new Promise((r) => setTimeout(r, Number(slow[1])));

    const documents: string[] = body.documents;
    const scored = documents.map((d, index) => ({ index, relevance_score: fakeScore(body.query, d) }));
    const results =
      model === 'unsorted'
        ? scored
        : [...scored].sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index).slice(0, body.top_n ?? scored.length);
    const tokens = /^tokens-(\d+)$/.exec(model);
    const bad = malformedCountOf(model);
    answer(200, {
      id: crypto.randomUUID(),
      results,
      meta: {
        api_version: { version: '2' },
        billed_units: { search_units: bad ?? 1 },
        ...(tokens ? { tokens: { input_tokens: Number(tokens[1]) } } : bad !== undefined ? { tokens: { input_tokens: bad } } : {}),
      },
    });
  });
}
