import { parseConfig } from '@gateway/config';

/** One simulated chat model: the config the mcp tests run their tools against. */
export const MCP_TEST_CONFIG = parseConfig({
  providers: [{ id: 'sim', kind: 'simulated' }],
  models: [
    {
      id: 'mcp/chat',
      name: 'Chat',
      category: 'text',
      status: 'available',
      context_length: 8192,
      max_output_tokens: 64,
      pricing: { prompt: '0.000001', completion: '0.000002' },
      endpoints: [{ provider: 'sim', model: 'chat' }],
    },
  ],
});
