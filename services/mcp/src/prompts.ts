import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

/** Worked examples: how the tools combine, for a model or a person new to this gateway. */
export function registerPrompts(server: McpServer): void {
  server.registerPrompt(
    'cheapest_answer',
    {
      title: 'Answer with the cheapest suitable model',
      description: 'A worked example: list the text models, quote the question on each, ask the cheapest, then read what it cost.',
      argsSchema: { question: z.string().describe('What to ask'), max_tokens: z.string().optional().describe('Cap on the reply, e.g. 200') },
    },
    ({ question, max_tokens }) => ({
      description: 'Cheapest-model answer, with the cost checked afterwards',
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: [
              'Answer the question below using the model gateway tools, spending as little as possible:',
              '1. Call list_models with category "text" and keep the models whose status is "available".',
              `2. For each, call quote with the model, messages [{"role": "user", "content": <the question>}]${max_tokens ? ` and max_tokens ${max_tokens}` : ''}; compare expected_cost.`,
              '3. Call get_credits and make sure available covers the worst_case_hold of the cheapest.',
              '4. Call chat on the cheapest model with the same messages and max_tokens.',
              '5. Call get_generation with the generation_id of the chat result and report total_cost beside the answer.',
              '',
              `Question: ${question}`,
            ].join('\n'),
          },
        },
      ],
    }),
  );
}
