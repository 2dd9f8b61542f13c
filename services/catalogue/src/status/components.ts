/** The four monitored components, in the order GET /v1/status lists them, with what their latency figure means. */
export const COMPONENTS = [
  {
    key: 'api',
    name: 'API',
    description: 'The public API answering: GET /v1/models/count through the public listener.',
    latencyMeaning: 'Round trip of the newest GET /v1/models/count made through the public API, in milliseconds.',
  },
  {
    key: 'providers',
    name: 'Model providers',
    description: 'Upstream endpoints of the available models: real traffic and circuit state, or a light probe where there is no traffic.',
    latencyMeaning:
      'Mean time to an upstream answer across the endpoints measured in the newest sample (real calls where there was traffic, else the probe round trip), in milliseconds; 0 when no endpoint was measured (simulated ones are not).',
  },
  {
    key: 'storage',
    name: 'Storage',
    description: 'The databases and the Redis this deployment uses, each pinged.',
    latencyMeaning: 'The slowest ping of the newest sample, in milliseconds.',
  },
  {
    key: 'payments',
    name: 'Payments',
    description: 'The ledger (billing) answering its readiness check.',
    latencyMeaning: "Round trip of the newest ping of billing's ledger, in milliseconds.",
  },
] as const;

export type ComponentKey = (typeof COMPONENTS)[number]['key'];
