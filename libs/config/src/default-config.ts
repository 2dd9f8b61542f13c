/** The embedded gateway's built-in catalogue: simulated upstreams only, so a fresh clone answers offline. */
export const DEFAULT_CONFIG = {
  providers: [
    { id: 'sim-primary', kind: 'simulated' },
    { id: 'sim-backup', kind: 'simulated' },
  ],
  models: [
    {
      id: 'demo/chat-small',
      name: 'Demo Chat Small',
      description: 'A simulated chat model: deterministic replies, real usage and billing.',
      category: 'text',
      status: 'available',
      context_length: 32768,
      max_output_tokens: 1024,
      pricing: { prompt: '0.0000005', completion: '0.0000015', request: '0' },
      featured: true,
      supported_parameters: ['max_tokens', 'temperature', 'top_p', 'stop', 'stream'],
      endpoints: [
        { provider: 'sim-primary', model: 'sim-chat-small' },
        { provider: 'sim-backup', model: 'sim-chat-small' },
      ],
    },
    {
      id: 'demo/chat-large',
      name: 'Demo Chat Large',
      description: 'A larger simulated chat model with a higher price.',
      category: 'text',
      status: 'available',
      context_length: 131072,
      max_output_tokens: 4096,
      pricing: { prompt: '0.000003', completion: '0.000015' },
      supported_parameters: ['max_tokens', 'temperature', 'top_p', 'stop', 'stream'],
      endpoints: [{ provider: 'sim-primary', model: 'sim-chat-large' }],
    },
    {
      id: 'demo/chat-next',
      name: 'Demo Chat Next',
      description: 'Announced, not yet served.',
      category: 'text',
      status: 'coming_soon',
      context_length: 262144,
      max_output_tokens: 8192,
      pricing: { prompt: '0.000002', completion: '0.000008' },
      endpoints: [{ provider: 'sim-primary', model: 'sim-chat-next' }],
    },
  ],
};
