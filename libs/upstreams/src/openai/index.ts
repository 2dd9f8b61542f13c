import type { ChatChunk, ChatCompletion, EmbeddingProtocol, ImageProtocol, SpeechProtocol, TextProtocol, TranscriptionProtocol } from '../types';
import { UpstreamError, classify } from '../upstream-error';
import { sseData } from '../sse';
import { openAIEmbed } from './embed';
import { openAIImages } from './images';
import { openAISpeech } from './speech';
import { openAITranscribe } from './transcription';
import { createUpstreamClient } from '../http';

/**
 * OpenAI-compatible upstreams (`kind: openai`): chat completions, embeddings, image generations, speech and
 * transcriptions under {base_url}, through one undici pool.
 */
export function createOpenAIProtocol(
  env: NodeJS.ProcessEnv = process.env,
): TextProtocol & EmbeddingProtocol & ImageProtocol & SpeechProtocol & TranscriptionProtocol {
  const client = createUpstreamClient({}, env);
  const post = client.json;

  return {
    async chat(ep, body, opts) {
      const json = (await client.jsonWhole(ep, '/chat/completions', { ...body, model: ep.upstreamModel, stream: false }, opts)) as ChatCompletion;
      if (!json || !Array.isArray(json.choices)) throw new UpstreamError('protocol', 'upstream answer has no choices');
      return json;
    },
    async chatStream(ep, body, opts) {
      const streamOptions = { ...((body.stream_options as object) ?? {}), include_usage: true };
      const res = await post(ep, '/chat/completions', { ...body, model: ep.upstreamModel, stream: true, stream_options: streamOptions }, opts);
      return (async function* () {
        try {
          for await (const data of sseData(res.body)) {
            if (data === '[DONE]') return;
            let chunk: ChatChunk & { error?: { message?: string } };
            try {
              chunk = JSON.parse(data);
            } catch {
              throw new UpstreamError('protocol', 'upstream sent a malformed stream frame');
            }
            if (chunk.error) throw new UpstreamError('broken_stream', `upstream stream error: ${chunk.error.message ?? 'unknown'}`);
            yield chunk;
          }
          // The body ended without [DONE]: the upstream hung up mid-answer.
          throw new UpstreamError('broken_stream', 'upstream stream ended early');
        } catch (e) {
          throw classify(e);
        }
      })();
    },
    embed: openAIEmbed(client.jsonWhole),
    generateImages: openAIImages(client.jsonWhole),
    speech: openAISpeech(post),
    transcribe: openAITranscribe(client.form),
  };
}
