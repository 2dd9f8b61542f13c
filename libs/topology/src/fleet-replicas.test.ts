import { MAX_REPLICAS, parseReplicas, replicaName, replicaPort } from './fleet-replicas';

describe('the fleet replica count', () => {
  it('takes one count for every service, a count per service, or both', () => {
    expect(parseReplicas('2')).toEqual({ edge: 2, billing: 2, text: 2, media: 2, jobs: 2, catalogue: 2, mcp: 2 });
    expect(parseReplicas('text=3,billing=2')).toEqual({ edge: 1, billing: 2, text: 3, media: 1, jobs: 1, catalogue: 1, mcp: 1 });
    expect(parseReplicas('text=3, 2')).toEqual({ edge: 2, billing: 2, text: 3, media: 2, jobs: 2, catalogue: 2, mcp: 2 });
    expect(parseReplicas('text=3', parseReplicas('2')).edge).toBe(2);
  });

  it('refuses what is not a count, or names no service, with a sentence saying which', () => {
    expect(() => parseReplicas('0')).toThrow('"0" is not a replica count from 1 to 9');
    expect(() => parseReplicas(String(MAX_REPLICAS + 1))).toThrow('is not a replica count');
    expect(() => parseReplicas('text=two')).toThrow('replicas of text: "two"');
    expect(() => parseReplicas('txt=2')).toThrow('no fleet service named "txt"');
    expect(() => parseReplicas(' , ')).toThrow('give N, or name=N');
  });

  it('names and places replicas after the first, which keeps the single-replica name and port', () => {
    expect([0, 1, 2].map((r) => replicaName('text', r))).toEqual(['text', 'text-2', 'text-3']);
    expect([0, 1, 2].map((r) => replicaPort(8082, r))).toEqual([8082, 8182, 8282]);
  });
});
