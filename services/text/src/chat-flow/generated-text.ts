/**
 * What the upstream wrote in one chat message or stream delta, as the text the gateway counts when usage never
 * comes. Every kind of output is priced as completion tokens, reasoning too (providers bill it whether or not the
 * client is shown it), so each kind counts: the answer, a refusal, reasoning (`reasoning_content`, and `reasoning`
 * as some OpenAI-compatible providers name it; the message API's thinking arrives as `reasoning_content`), and
 * tool calls.
 */
const TEXT_FIELDS = ['reasoning_content', 'reasoning', 'content', 'refusal'] as const;
const CALL_FIELDS = ['tool_calls', 'function_call'] as const;

export function generatedText(part: Record<string, unknown> | null | undefined): string {
  if (!part) return '';
  let text = '';
  for (const field of TEXT_FIELDS) {
    const v = part[field];
    if (typeof v === 'string') text += v;
  }
  for (const field of CALL_FIELDS) if (part[field]) text += JSON.stringify(part[field]);
  return text;
}
