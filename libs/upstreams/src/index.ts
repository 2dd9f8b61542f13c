export type {
  ChatChunk,
  ChatCompletion,
  ChatUsage,
  CallOptions,
  TextProtocol,
  EmbeddingProtocol,
  EmbeddingRequest,
  EmbeddingResult,
  RerankProtocol,
  RerankRequest,
  RerankResult,
  ImageProtocol,
  ImageRequest,
  ImageResult,
  GeneratedImage,
  SpeechProtocol,
  SpeechRequest,
  SpeechAudio,
  SpeechFormat,
  TranscriptionProtocol,
  TranscriptionRequest,
  TranscriptionResult,
  TranscriptFormat,
  QueueProtocol,
  QueueTicket,
  QueueStatus,
  QueueLog,
} from './types';
export { UpstreamError, classify, type FailureKind } from './upstream-error';
export { countTokens, countTokensOfAll, warmTokenizer } from './tokens';
export { sseData } from './sse';
export { createOpenAIProtocol } from './openai';
export { createSimulatedProtocol } from './simulated';
export { createFalProtocol } from './fal';
export { createSimulatedQueue } from './simulated/queue';
export { silentMp4 } from './simulated/mp4';
export { guardedAgent, isPublicUnicast, OriginRefusedError } from './origin-guard';
export type { UpstreamWatch } from './answer-schema';
import { malformedUsageReport, type UpstreamWatch } from './answer-schema';
import type { ProviderConfig } from '@gateway/config';
import type { EmbeddingProtocol, ImageProtocol, QueueProtocol, RerankProtocol, SpeechProtocol, TextProtocol, TranscriptionProtocol } from './types';
import { createOpenAIProtocol } from './openai';
import { createSimulatedProtocol } from './simulated';
import { createAnthropicProtocol } from './anthropic';
import { createCohereProtocol } from './cohere';
import { createFalProtocol } from './fal';

type Kind = ProviderConfig['kind'];

/** What each provider kind can serve; a route asks for the capability it needs and fails over where it is missing. */
export interface Protocols {
  text(kind: Kind): TextProtocol | undefined;
  embedding(kind: Kind): EmbeddingProtocol | undefined;
  rerank(kind: Kind): RerankProtocol | undefined;
  image(kind: Kind): ImageProtocol | undefined;
  speech(kind: Kind): SpeechProtocol | undefined;
  transcription(kind: Kind): TranscriptionProtocol | undefined;
  queue(kind: Kind): QueueProtocol | undefined;
}

type AnyProtocol = Partial<
  TextProtocol & EmbeddingProtocol & RerankProtocol & ImageProtocol & SpeechProtocol & TranscriptionProtocol & QueueProtocol
>;

/**
 * One protocol object per provider kind, shared by every endpoint of that kind. `watch` is where a protocol
 * reports usage it refused (logged and counted per endpoint); the call itself goes on with the gateway's count.
 */
export function createProtocols(watch: UpstreamWatch): Protocols {
  const malformedUsage = malformedUsageReport(watch);
  const byKind: Partial<Record<Kind, AnyProtocol>> = {
    openai: createOpenAIProtocol(process.env, malformedUsage),
    simulated: createSimulatedProtocol(),
    anthropic: createAnthropicProtocol(process.env, malformedUsage),
    cohere: createCohereProtocol(process.env, malformedUsage),
    fal: createFalProtocol(),
  };
  const has = <K extends string>(kind: Kind, method: K) => {
    const p = byKind[kind] as Record<string, unknown> | undefined;
    return p && typeof p[method] === 'function' ? (p as never) : undefined;
  };
  return {
    text: (kind) => has(kind, 'chat'),
    embedding: (kind) => has(kind, 'embed'),
    rerank: (kind) => has(kind, 'rerank'),
    image: (kind) => has(kind, 'generateImages'),
    speech: (kind) => has(kind, 'speech'),
    transcription: (kind) => has(kind, 'transcribe'),
    queue: (kind) => has(kind, 'submit'),
  };
}
