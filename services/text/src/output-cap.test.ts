import type { ResolvedModel } from '@gateway/config';
import { requestedCap, withOutputCap } from './output-cap';

const model = (max_output_tokens: number) => ({ config: { max_output_tokens } }) as ResolvedModel;
const messages = [{ role: 'user', content: 'x' }];

describe('the output cap', () => {
  it('is the tightest limit the client sent (outputCap in @gateway/pricing then bounds it by the model’s own)', () => {
    expect(requestedCap({ messages })).toBeUndefined();
    expect(requestedCap({ messages, max_tokens: 10, max_completion_tokens: 3000 })).toBe(10);
    expect(requestedCap({ messages, max_tokens: 3000, max_completion_tokens: 10 })).toBe(10);
  });

  it('goes upstream at that one value in every limit field the client sent, and in max_completion_tokens when it sent none', () => {
    expect(withOutputCap(model(4000), { messages, max_tokens: 10, max_completion_tokens: 3000 })).toEqual({
      messages,
      max_tokens: 10,
      max_completion_tokens: 10,
    });
    expect(withOutputCap(model(100), { messages, max_completion_tokens: 3000 })).toEqual({ messages, max_completion_tokens: 100 });
    expect(withOutputCap(model(100), { messages, max_tokens: 7 })).toEqual({ messages, max_tokens: 7 });
    expect(withOutputCap(model(100), { messages })).toEqual({ messages, max_completion_tokens: 100 });
  });
});
