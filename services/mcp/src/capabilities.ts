/** Who answers initialize (serverInfo), and the SDK server's name. */
export const SERVER_INFO = { name: 'model-gateway', version: '0.1.0' } as const;

/**
 * What initialize promises, and what the SDK server is built with. `logging`: job ends arrive as
 * notifications/message, which MCP ties to this capability; logging/setLevel (set-level.ts) sets the least level sent.
 */
export const CAPABILITIES = {
  tools: { listChanged: false },
  resources: { subscribe: false, listChanged: false },
  prompts: { listChanged: false },
  logging: {},
};
