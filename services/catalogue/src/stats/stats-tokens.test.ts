import { statsTokens } from './stats-tokens';

describe('statsTokens: /v1/stats counts input plus output, without cached input and reasoning', () => {
  it('leaves out cache reads and reasoning', () => {
    // 2006 prompt of which 1920 cached: 86; 1186 completion of which 1024 reasoning: 162.
    expect(statsTokens({ tokens_prompt: 2006, tokens_completion: 1186, tokens_cached: 1920, tokens_reasoning: 1024 })).toBe(248);
  });

  it('counts every token of a usage event from before the figures existed', () => {
    expect(statsTokens({ tokens_prompt: 19, tokens_completion: 10 })).toBe(29);
  });

  it('never goes below zero on figures that disagree', () => {
    expect(statsTokens({ tokens_prompt: 5, tokens_completion: 1, tokens_cached: 9, tokens_reasoning: 3 })).toBe(0);
  });
});
