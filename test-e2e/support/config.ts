/** The e2e catalogue: one model per upstream behaviour the fake provider can play (see fake-openai.ts). */
export function testConfig(fakeUrl: string) {
  const price = { prompt: '0.001', completion: '0.002' };
  const text = (id: string, endpoints: Array<[string, string]>, extra: Record<string, unknown> = {}) => ({
    id, name: id, category: 'text', status: 'available', context_length: 4096, max_output_tokens: 100, pricing: price,
    endpoints: endpoints.map(([provider, model]) => ({ provider, model })), ...extra,
  });
  return {
    providers: [
      { id: 'fake', kind: 'openai', base_url: fakeUrl, timeout_ms: 400 },
      { id: 'patient', kind: 'openai', base_url: fakeUrl, timeout_ms: 10_000 },
      { id: 'dead', kind: 'openai', base_url: 'http://127.0.0.1:9/v1', timeout_ms: 400 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      text('test/ok', [['fake', 'ok']]),
      text('test/failover', [['fake', 'status-500'], ['fake', 'ok']]),
      text('test/dead-first', [['dead', 'ok'], ['fake', 'ok']]),
      text('test/slow-first', [['fake', 'slow-1500'], ['fake', 'ok']]),
      text('test/all-fail', [['fake', 'status-503'], ['fake', 'status-429']]),
      text('test/client-error', [['fake', 'status-400'], ['fake', 'ok']]),
      text('test/break', [['fake', 'break-3']]),
      text('test/words', [['fake', 'words-20']]),
      text('test/slow', [['patient', 'slow-700']]),
      text('test/overreport', [['fake', 'overreport']], { max_output_tokens: 10 }),
      text('test/soon', [['fake', 'ok']], { status: 'coming_soon' }),
      text('test/sim', [['sim', 'sim-1']]),
      text('test/tools', [['fake', 'tool-call']]),
      text('test/echo', [['fake', 'echo']]),
      text('test/pricey', [['fake', 'ok']], { pricing: { prompt: '1', completion: '1' } }),
    ],
  };
}
