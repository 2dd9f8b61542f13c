import type { TextPrice } from './money';

/** What every model of the e2e catalogue charges per token, unless it says otherwise. */
export const TEXT_PRICE: TextPrice = { prompt: '0.001', completion: '0.002' };

/**
 * The e2e catalogue: one model per upstream behaviour the fake provider can play (see fake-openai.ts).
 * Circuits count failures per endpoint (provider/model), so every failing behaviour has an endpoint of its own, and
 * the providers that ordinary answers go through wait long enough that a loaded machine never times them out:
 * only `stall`, which nothing healthy uses, has a short timeout, for the tests of timeouts.
 */
export function testConfig(fakeUrl: string) {
  const text = (id: string, endpoints: Array<[string, string]>, extra: Record<string, unknown> = {}) => ({
    id,
    name: id,
    category: 'text',
    status: 'available',
    context_length: 4096,
    max_output_tokens: 100,
    pricing: TEXT_PRICE,
    endpoints: endpoints.map(([provider, model]) => ({ provider, model })),
    ...extra,
  });
  return {
    providers: [
      { id: 'fake', kind: 'openai', base_url: fakeUrl, timeout_ms: 10_000 },
      { id: 'stall', kind: 'openai', base_url: fakeUrl, timeout_ms: 400 },
      { id: 'dead', kind: 'openai', base_url: 'http://127.0.0.1:9/v1', timeout_ms: 400 },
      // Only the test that opens every circuit of a model uses it, so the circuits it opens are its own.
      { id: 'down', kind: 'openai', base_url: fakeUrl, timeout_ms: 10_000 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      text('test/ok', [['fake', 'ok']]),
      text('test/failover', [
        ['fake', 'status-500'],
        ['fake', 'ok'],
      ]),
      text('test/dead-first', [
        ['dead', 'ok'],
        ['fake', 'ok'],
      ]),
      text('test/slow-first', [
        ['stall', 'slow-1500'],
        ['fake', 'ok'],
      ]),
      text('test/all-fail', [
        ['fake', 'status-503'],
        ['fake', 'status-429'],
      ]),
      text('test/first-model-fails', [
        ['fake', 'status-502'],
        ['fake', 'status-504'],
      ]),
      text('test/unhealthy', [
        ['down', 'status-503'],
        ['down', 'status-502'],
      ]),
      text('test/client-error', [
        ['fake', 'status-400'],
        ['fake', 'ok'],
      ]),
      text('test/break', [['fake', 'break-3']]),
      text('test/break-at-once', [['fake', 'break-0']]),
      text('test/words', [['fake', 'words-20']]),
      text('test/trickle', [['fake', 'trickle-5-2000']]),
      text('test/slow', [['fake', 'slow-700']]),
      text('test/overreport', [['fake', 'overreport']], { max_output_tokens: 10 }),
      text('test/soon', [['fake', 'ok']], { status: 'coming_soon' }),
      text('test/sim', [['sim', 'sim-1']]),
      text('test/tools', [['fake', 'tool-call']]),
      text('test/echo', [['fake', 'echo']]),
      text('test/pricey', [['fake', 'ok']], { pricing: { prompt: '1', completion: '1' } }),
    ],
  };
}

/**
 * The small chat model a suite of another category keeps beside its own (`test/chat`: 10 tokens at most, 0.001 per
 * prompt token), so it can refuse a text model on its routes and spend through a text route on the same account.
 */
export function plainChatModel(provider: string, model: string) {
  return {
    id: 'test/chat',
    name: 'chat',
    category: 'text',
    status: 'available',
    context_length: 4096,
    max_output_tokens: 10,
    pricing: { prompt: '0.001' },
    endpoints: [{ provider, model }],
  };
}
