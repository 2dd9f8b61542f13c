import type { ResolvedEndpoint } from '@gateway/config';
import { simulatedEmbed, simulatedVector } from './embed';
import { overlapScore, simulatedRerank } from './rerank';

const ep = { key: 'sim/sim-embed', provider: { id: 'sim', kind: 'simulated' }, upstreamModel: 'sim-embed' } as ResolvedEndpoint;
const opts = { signal: new AbortController().signal, requestId: 'req_test' };
const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('simulated embeddings', () => {
  it('answers one deterministic unit vector per input, 16 dimensions by default', async () => {
    const a = await simulatedEmbed(ep, { input: ['hello world', 'bye'] }, opts);
    const b = await simulatedEmbed(ep, { input: ['hello world', 'bye'] }, opts);
    expect(a).toEqual(b);
    expect(a.data.map((d) => d.embedding.length)).toEqual([16, 16]);
    for (const d of a.data) expect(norm(d.embedding)).toBeCloseTo(1, 12);
    expect(a.data[0].embedding).not.toEqual(a.data[1].embedding);
    expect(a.usage).toEqual({ prompt_tokens: 3 });
  });

  it('honours dimensions: a shorter vector is the longer one truncated and renormalised', () => {
    const long = simulatedVector('seed', 32);
    const short = simulatedVector('seed', 8);
    const prefix = long.slice(0, 8);
    expect(short.map((x) => x * norm(prefix))).toEqual(prefix.map((x) => expect.closeTo(x, 12)));
  });

  it('counts token arrays by length and refuses absurd dimensions as the client mistake', async () => {
    expect((await simulatedEmbed(ep, { input: [[1, 2, 3], [4]] }, opts)).usage).toEqual({ prompt_tokens: 4 });
    await expect(simulatedEmbed(ep, { input: ['x'], dimensions: 100_000 }, opts)).rejects.toMatchObject({ status: 400, clientFault: true });
  });
});

describe('simulated rerank', () => {
  it('scores by word overlap and answers in relevance order with request indexes', async () => {
    expect(overlapScore('red apple', 'a red apple')).toBeCloseTo(2 / Math.sqrt(6));
    expect(overlapScore('red apple', 'blue sky')).toBe(0);
    const { results, usage } = await simulatedRerank(
      ep,
      { query: 'red apple pie', documents: ['blue sky', 'apple pie recipe', 'red apple pie'], top_n: 2 },
      opts,
    );
    expect(results.map((r) => r.index)).toEqual([2, 1]);
    expect(results[0].relevance_score).toBeCloseTo(1);
    expect(usage).toBeUndefined();
  });
});
