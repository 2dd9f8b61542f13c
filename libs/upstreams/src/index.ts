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
export { claimTokenWorker, countTokens, countTokensOfAll, warmTokenizer } from './tokens';
export { createOpenAIProtocol } from './openai';
export { createSimulatedProtocol } from './simulated';
export { createFalProtocol } from './fal';
export { createSimulatedQueue } from './simulated/queue';
export { silentMp4 } from './simulated/mp4';
export { guardedAgent, isPublicUnicast, OriginRefusedError } from './origin-guard';
export type { UpstreamWatch } from './answer-schema';
export {
  createProtocols,
  protocolsOf,
  type Capabilities,
  type Capability,
  type CapabilityTable,
  type Protocols,
  type ProviderKind,
} from './protocols';
