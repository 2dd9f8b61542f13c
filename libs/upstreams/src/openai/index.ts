import type { EmbeddingProtocol, ImageProtocol, SpeechProtocol, TextProtocol, TranscriptionProtocol } from '../types';
import { UpstreamError, classify } from '../upstream-error';
import type { MalformedUsage } from '../answer-schema';
import { openAIEmbed } from './embed';
import { openAIImages } from './images';
import { openAISpeech } from './speech';
import { openAITranscribe } from './transcription';
import { createUpstreamClient } from '../http';
import { readChunk, readCompletion } from './schema';

/**
 * OpenAI-compatible upstreams (`kind: openai`): chat completions, embeddings, image generations, speech and
 * transcriptions under {base_url}, through one undici pool.
 */
export function createOpenAIProtocol(
  env: NodeJS.ProcessEnv = process.env,
  malformedUsage: MalformedUsage = () => {},
): TextProtocol & EmbeddingProtocol & ImageProtocol & SpeechProtocol & TranscriptionProtocol {
  const client = createUpstreamClient({}, env);

  return {
    async chat(ep, body, opts) {
      const json = await client.jsonWhole(ep, '/chat/completions', { ...body, model: ep.upstreamModel, stream: false }, opts);
      return readCompletion(json, (issue) => malformedUsage(ep, issue));
    },
    async chatStream(ep, body, opts) {
      const streamOptions = { ...((body.stream_options as object) ?? {}), include_usage: true };
      const payload = { ...body, model: ep.upstreamModel, stream: true, stream_options: streamOptions };
      const frames = await client.sse(ep, '/chat/completions', payload, opts);
      return (async function* () {
        try {
          for await (const data of frames) {
            if (data === '[DONE]') return;
            yield readChunk(data, (issue) => malformedUsage(ep, issue));
          }
          // The body ended without [DONE]: the upstream hung up mid-answer.
          throw new UpstreamError('broken_stream', 'upstream stream ended early');
        } catch (e) {
          throw classify(e);
        }
      })();
    },
    embed: openAIEmbed(client.jsonWhole, malformedUsage),
    generateImages: openAIImages(client.jsonWhole),
    speech: openAISpeech(client.json),
    transcribe: openAITranscribe(client.form),
  };
}
