import type { ResolvedModel } from '@gateway/config';
import { formatUsd } from '@gateway/money';
import {
  characterCount,
  imageCharge,
  imageWorstCase,
  outputCap,
  promptText,
  resolveShape,
  speechCharge,
  textCharge,
  textWorstCase,
} from '@gateway/pricing';
import { countTokens } from '@gateway/upstreams';
import { z } from 'zod';
import { toolResult } from './result';
import { modelSlug } from './shapes';
import { defineTool } from './tool';

const message = z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() });

const input = z.object({
  model: modelSlug,
  messages: z.array(message).min(1).optional().describe('Text models: the chat you would send'),
  max_tokens: z.number().int().positive().optional().describe("Text models: the reply's cap (default: the model's output cap)"),
  prompt: z.string().optional().describe('Image models: the prompt (not priced, only checked)'),
  n: z.number().int().min(1).max(10).optional().describe('Image models: how many images'),
  size: z.string().max(64).optional(),
  aspect_ratio: z.string().max(64).optional(),
  resolution: z.string().max(64).optional(),
  input: z.string().optional().describe('Speech models: the text to speak'),
});

type QuoteArgs = z.infer<typeof input>;

interface Quote {
  hold: bigint;
  expected: bigint;
  basis: string;
}

/**
 * The hold with the very functions the spending routes size theirs with (@gateway/pricing), so the quote is the
 * amount a call of the same shape reserves, never an approximation of it.
 */
async function quoteOf(m: ResolvedModel, args: QuoteArgs): Promise<Quote | string> {
  switch (m.config.category) {
    case 'text': {
      if (!args.messages) return 'a text model needs `messages` to quote';
      const text = promptText({ messages: args.messages });
      const output = outputCap(m, args.max_tokens);
      const prompt = await countTokens(text);
      return {
        hold: textWorstCase(m, text, args.messages.length, args.max_tokens),
        expected: textCharge(m, prompt, output),
        basis: `hold: every prompt byte a token (at the dearest of the prompt and cache rates) plus ${output} output tokens; expected: ${prompt} prompt tokens (counted, none from a cache) × prompt rate + ${output} × completion rate`,
      };
    }
    case 'image': {
      const n = args.n ?? 1;
      const { resolution } = resolveShape(args);
      return {
        hold: imageWorstCase(m, n, resolution),
        expected: imageCharge(m, n, resolution),
        basis: `${n} image(s) at the rate of ${resolution ?? 'the dearest resolution the model lists (none asked for)'}`,
      };
    }
    case 'audio': {
      if (args.input === undefined || m.config.pricing.character === undefined)
        return 'quotes cover speech (an audio model priced per character, with `input`)';
      const exact = speechCharge(m, args.input);
      return { hold: exact, expected: exact, basis: `${characterCount(args.input)} characters × the character rate (hold and charge alike)` };
    }
    default:
      return `quotes cover text, image and speech models; ${m.config.category} is not quoted yet`;
  }
}

/** What a call would reserve (worst case) and is expected to cost, before making it. Computed here; spends nothing. */
export const quote = defineTool({
  name: 'quote',
  title: 'Quote a call',
  description:
    'Before a chat, image or speech call: the worst-case amount the gateway will hold against the balance (the call is refused with 402 when available credit cannot cover it) and the expected cost. Spends nothing.',
  routes: [],
  input,
  output: z.object({
    model: z.string(),
    category: z.string(),
    currency: z.literal('USD'),
    worst_case_hold: z.string().describe('USD, the reservation the call places'),
    expected_cost: z.string().describe('USD'),
    basis: z.string(),
  }),
  async run(args, { deps }) {
    const m = deps.registry.get(args.model);
    if (!m) throw new Error(`Unknown model ${args.model}: list_models names the models served`);
    const q = await quoteOf(m, args);
    if (typeof q === 'string') throw new Error(q);
    return toolResult({
      model: m.config.id,
      category: m.config.category,
      currency: 'USD',
      worst_case_hold: formatUsd(q.hold),
      expected_cost: formatUsd(q.expected),
      basis: q.basis,
    });
  },
});
