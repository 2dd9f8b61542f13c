import { spendControlFields } from '@gateway/config';
import { z } from 'zod';

/*
 * POST /v1/responses, validated once here. Fields outside the contract's table are dropped, never forwarded: they are
 * responses-API settings with no chat-completions meaning, and an upstream refusing one would fail the whole call.
 * Fields that only make sense against stored state are refused instead, because ignoring them would silently answer
 * a different question. `null` means "not set" on every optional field, as the openai clients may send it.
 */

const NO_STATE = 'is not supported: the gateway stores no responses or conversations; send the whole conversation as input';

const inputText = z.object({ type: z.literal('input_text'), text: z.string() });
const outputText = z.object({ type: z.literal('output_text'), text: z.string() });
const refusal = z.object({ type: z.literal('refusal'), refusal: z.string() });
const inputImage = z.object({
  type: z.literal('input_image'),
  image_url: z.string({ error: 'input_image needs an image_url (http(s) or data: URL); file_id is not supported' }).min(1),
  detail: z.enum(['low', 'high', 'auto', 'original']).nullish(),
});

const PART_TYPES = 'content part type must be input_text, output_text, refusal or input_image';
const part = z.discriminatedUnion('type', [inputText, outputText, refusal, inputImage], { error: PART_TYPES });
export type ContentPart = z.infer<typeof part>;

/**
 * A string is shorthand for a one-element list. Expanding it before validation (rather than a string|list union)
 * keeps the list's own error messages, which name the offending item or part.
 */
function listOrString<T extends z.ZodType>(list: T, wrap: (s: string) => unknown) {
  return z.preprocess((v) => (typeof v === 'string' ? wrap(v) : v), list);
}

const message = z
  .object({
    type: z.literal('message'),
    role: z.enum(['user', 'assistant', 'system', 'developer']),
    content: listOrString(
      z.array(part, { error: 'content must be a string or an array of content parts' }).min(1, 'content must not be an empty list'),
      (text) => [{ type: 'input_text', text }],
    ),
  })
  .refine((m) => m.role === 'user' || m.content.every((p) => p.type !== 'input_image'), {
    message: 'input_image is only allowed in user messages',
    path: ['content'],
  });

const functionCall = z.object({
  type: z.literal('function_call'),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
});

const functionCallOutput = z.object({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(z.union([inputText, outputText]))], {
    error: 'function_call_output.output must be a string or an array of input_text parts',
  }),
});

const ITEM_TYPES = 'input item type must be message, function_call or function_call_output (item_reference and hosted tool items are not supported)';
/** An item without `type` is a message, as in the openai client's EasyInputMessage. */
const item = z.preprocess(
  (v) => (v && typeof v === 'object' && !Array.isArray(v) && (v as { type?: unknown }).type === undefined ? { ...v, type: 'message' } : v),
  z.discriminatedUnion('type', [message, functionCall, functionCallOutput], { error: ITEM_TYPES }),
);
export type InputItem = z.infer<typeof item>;

const functionFields = {
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
};
/** The contract's chat shape and the responses shape the openai client sends; the `function` key tells them apart. */
const tool = z.union(
  [z.object({ type: z.literal('function'), function: z.object(functionFields) }), z.object({ type: z.literal('function'), ...functionFields })],
  {
    error:
      'each tool must be {type:"function", name, parameters} or {type:"function", function:{name, parameters}}; only function tools are supported',
  },
);
export type Tool = z.infer<typeof tool>;

const toolChoice = z.union(
  [
    z.enum(['auto', 'none', 'required']),
    z.object({ type: z.literal('function'), function: z.object({ name: z.string().min(1) }) }),
    z.object({ type: z.literal('function'), name: z.string().min(1) }),
  ],
  { error: 'tool_choice must be "auto", "none", "required" or a named function' },
);
export type ToolChoice = z.infer<typeof toolChoice>;

const textFormat = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      name: z.string().min(1),
      schema: z.record(z.string(), z.unknown()),
      description: z.string().nullish(),
      strict: z.boolean().nullish(),
    }),
  ],
  { error: 'text.format type must be text, json_object or json_schema' },
);

export const responsesBody = z
  .object({
    model: z.string().min(1),
    input: listOrString(z.array(item, { error: 'input must be a string or an array of input items' }).min(1, 'input must not be empty'), (text) =>
      text ? [{ type: 'message', role: 'user', content: text }] : [],
    ),
    instructions: z.string().nullish(),
    max_output_tokens: z.number().int().positive().nullish(),
    stream: z.boolean().nullish(),
    tools: z.array(tool).nullish(),
    tool_choice: toolChoice.nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    metadata: z.record(z.string(), z.unknown()).nullish(),
    store: z.boolean().nullish(),
    user: z.string().nullish(),
    text: z.object({ format: textFormat.nullish() }).nullish(),
    previous_response_id: z.null({ error: `previous_response_id ${NO_STATE}` }).optional(),
    conversation: z.null({ error: `conversation ${NO_STATE}` }).optional(),
    prompt: z.null({ error: 'prompt (stored prompt templates) is not supported; send instructions and input instead' }).optional(),
    /** Additions: OpenRouter's provider preferences (route-plan.ts in @gateway/spend) and max_cost (cost-cap.ts). */
    ...spendControlFields,
    background: z.literal(false, { error: 'background mode is not supported: the gateway stores no responses to poll' }).nullish(),
  })
  .superRefine((b, ctx) => {
    const choice = b.tool_choice;
    const names = (b.tools ?? []).map(toolName);
    if (choice === 'required' && names.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: 'tool_choice "required" needs at least one tool' });
    }
    if (choice && typeof choice === 'object') {
      const name = 'function' in choice ? choice.function.name : choice.name;
      if (!names.includes(name))
        ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: `tool_choice names "${name}", which is not among the tools` });
    }
  });

export type ResponsesBody = z.infer<typeof responsesBody>;

function toolName(t: Tool): string {
  return 'function' in t ? t.function.name : t.name;
}
