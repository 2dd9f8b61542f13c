import { generatedText } from './generated-text';

describe('generated text', () => {
  it('counts every kind of output a message or delta carries, reasoning included', () => {
    expect(generatedText({ role: 'assistant', reasoning_content: 'think ' })).toBe('think ');
    expect(generatedText({ reasoning: 'ponder ' })).toBe('ponder ');
    expect(generatedText({ content: 'answer', refusal: null })).toBe('answer');
    expect(generatedText({ refusal: 'no' })).toBe('no');
    expect(generatedText({ content: null, tool_calls: [{ index: 0, function: { arguments: '{}' } }] })).toBe(
      '[{"index":0,"function":{"arguments":"{}"}}]',
    );
    expect(generatedText({ role: 'assistant' })).toBe('');
    expect(generatedText(undefined)).toBe('');
  });
});
