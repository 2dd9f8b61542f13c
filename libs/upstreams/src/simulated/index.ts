import crypto from 'node:crypto';
import type { ResolvedEndpoint } from '@gateway/config';
import type {
  ChatChunk,
  ChatCompletion,
  EmbeddingProtocol,
  ImageProtocol,
  QueueProtocol,
  RerankProtocol,
  SpeechProtocol,
  TextProtocol,
  TranscriptionProtocol,
} from '../types';
import { simulatedEmbed } from './embed';
import { simulatedRerank } from './rerank';
import { simulatedImages } from './images';
import { simulatedSpeech } from './speech';
import { simulatedTranscribe } from './transcription';
import { createSimulatedQueue } from './queue';

/**
 * The built-in upstream (`kind: simulated`): answers offline, deterministically (same request, same reply),
 * streams word by word, and reports usage like a real provider. A "token" here is a whitespace-separated word.
 */
const WORDS = (text: string) => text.split(/\s+/).filter(Boolean);

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join(' ');
  return '';
}

function compose(ep: ResolvedEndpoint, body: Record<string, unknown>) {
  const messages = (body.messages as Array<{ role: string; content: unknown }>) ?? [];
  const promptTokens = messages.reduce((n, m) => n + WORDS(contentText(m.content)).length + 3, 0);
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const digest = crypto.createHash('sha256').update(JSON.stringify(messages)).digest('hex').slice(0, 8);
  const echo = WORDS(contentText(lastUser?.content)).slice(0, 24).join(' ');
  const reply = WORDS(`This is a simulated reply from ${ep.upstreamModel} (${digest}). You said: ${echo || '(nothing)'}`);
  const max =
    typeof body.max_tokens === 'number' ? body.max_tokens : typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : Infinity;
  const words = reply.slice(0, Math.max(0, Math.min(reply.length, max)));
  return { promptTokens, words, finish: words.length < reply.length ? 'length' : 'stop', id: `sim-${digest}` };
}

export function createSimulatedProtocol(): TextProtocol &
  EmbeddingProtocol &
  RerankProtocol &
  ImageProtocol &
  SpeechProtocol &
  TranscriptionProtocol &
  QueueProtocol {
  return {
    async chat(ep, body) {
      const { promptTokens, words, finish, id } = compose(ep, body);
      const out: ChatCompletion = {
        id,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: ep.upstreamModel,
        choices: [{ index: 0, message: { role: 'assistant', content: words.join(' ') }, finish_reason: finish }],
        usage: { prompt_tokens: promptTokens, completion_tokens: words.length, total_tokens: promptTokens + words.length },
      };
      return out;
    },
    async chatStream(ep, body) {
      const { promptTokens, words, finish, id } = compose(ep, body);
      const created = Math.floor(Date.now() / 1000);
      const chunk = (delta: ChatChunk['choices'][number]['delta'], finish_reason: string | null): ChatChunk => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model: ep.upstreamModel,
        choices: [{ index: 0, delta, finish_reason }],
      });
      return (async function* () {
        yield chunk({ role: 'assistant', content: '' }, null);
        for (let i = 0; i < words.length; i++) yield chunk({ content: (i ? ' ' : '') + words[i] }, null);
        yield chunk({}, finish);
        yield {
          id,
          object: 'chat.completion.chunk',
          created,
          model: ep.upstreamModel,
          choices: [],
          usage: { prompt_tokens: promptTokens, completion_tokens: words.length, total_tokens: promptTokens + words.length },
        };
      })();
    },
    embed: simulatedEmbed,
    rerank: simulatedRerank,
    generateImages: simulatedImages,
    speech: simulatedSpeech,
    transcribe: simulatedTranscribe,
    ...createSimulatedQueue(),
  };
}
