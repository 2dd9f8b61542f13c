import type { ResolvedModel } from '@gateway/config';
import { parseRate } from '@gateway/money';
import { DEFAULT_OUTPUT_CAP, outputCap } from './output-cap';
import { promptText, textCharge, textWorstCase } from './text';

const model = (max_output_tokens: number | undefined, prompt = '0', completion = '0', request = '0') =>
  ({
    config: { max_output_tokens },
    rates: { prompt: parseRate(prompt), completion: parseRate(completion), request: parseRate(request) },
  }) as ResolvedModel;

describe('text pricing', () => {
  it('caps the output at what the client asked for, never above the model’s own limit, and 4096 without one', () => {
    expect(outputCap(model(100), undefined)).toBe(100);
    expect(outputCap(model(100), 5000)).toBe(100);
    expect(outputCap(model(100), 10)).toBe(10);
    expect(DEFAULT_OUTPUT_CAP).toBe(4096);
    expect(outputCap(model(undefined), undefined)).toBe(DEFAULT_OUTPUT_CAP);
  });

  it('reads as prompt every message, earlier tool calls and the tool definitions', () => {
    const text = promptText({
      messages: [{ content: 'Hi' }, { content: [{ type: 'text', text: 'x' }] }, { tool_calls: [{ id: 'c1' }] }],
      tools: [{ name: 'lookup' }],
    });
    expect(text).toBe('Hi[{"type":"text","text":"x"}]""[{"id":"c1"}][{"name":"lookup"}]');
  });

  it('holds every prompt byte a token plus 8 per message, the cap per choice and the request price', () => {
    // 0.001 a prompt token, 0.002 a completion token, 0.01 a request, in nano-USD.
    const m = model(100, '0.001', '0.002', '0.01');
    // "héllo" is 6 bytes; 2 messages add 16 framing tokens: 22 × 0.001 + 50 × 3 × 0.002 + 0.01 = 0.332 USD.
    expect(textWorstCase(m, 'héllo', 2, 50, 3)).toBe(332_000_000n);
    expect(textWorstCase(m, 'héllo', 2, undefined)).toBe(textCharge(m, 22, 100));
  });

  it('charges prompt and completion tokens and the request price, rounding once', () => {
    const m = model(100, '0.0000000004', '0.0000000004');
    // 1 + 2 tokens at 0.4 nano: 1.2 nano, one nano; per term it would have been 0 + 1.
    expect(textCharge(m, 1, 2)).toBe(1n);
  });
});
