/** Which service owns which public path. One table, read by the embedded and the fleet edge alike. */
export type ServiceName = 'billing' | 'text' | 'catalogue';

const PUBLIC = [/^\/v1\/models(\/count|\/user)?\/?$/, /^\/v1\/model\/[^/]+\/[^/]+\/?$/, /^\/v1\/(embeddings|images|videos)\/models\/?$/];
const KEYED: Array<[RegExp, ServiceName]> = [
  [/^\/v1\/(key|credits|generation)\/?$/, 'billing'],
  [/^\/v1\/(chat\/completions|completions|messages|responses|embeddings|rerank)\/?$/, 'text'],
];

export function publicOwner(path: string): ServiceName | undefined {
  return PUBLIC.some((p) => p.test(path)) ? 'catalogue' : undefined;
}

export function keyedOwner(path: string): ServiceName | undefined {
  return KEYED.find(([p]) => p.test(path))?.[1];
}
