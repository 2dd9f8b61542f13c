import type { ProviderConfig } from '@gateway/config';
import { malformedUsageReport, type UpstreamWatch } from './answer-schema';
import type { EmbeddingProtocol, ImageProtocol, QueueProtocol, RerankProtocol, SpeechProtocol, TextProtocol, TranscriptionProtocol } from './types';
import { createOpenAIProtocol } from './openai';
import { createSimulatedProtocol } from './simulated';
import { createAnthropicProtocol } from './anthropic';
import { createCohereProtocol } from './cohere';
import { createFalProtocol } from './fal';

export type ProviderKind = ProviderConfig['kind'];

/** Each capability a route may ask a provider kind for, and the protocol that serves it. */
export interface Capabilities {
  text: TextProtocol;
  embedding: EmbeddingProtocol;
  rerank: RerankProtocol;
  image: ImageProtocol;
  speech: SpeechProtocol;
  transcription: TranscriptionProtocol;
  queue: QueueProtocol;
}

export type Capability = keyof Capabilities;

/**
 * For every provider kind, every capability: the protocol serving it, or null where the kind has none. A kind added
 * to the config schema, or a capability added here, fails the type-check until each row says what it serves.
 */
export type CapabilityTable = { [K in ProviderKind]: { [C in Capability]: Capabilities[C] | null } };

/** What each provider kind can serve; a route asks for the capability it needs and fails over where it is missing. */
export type Protocols = { [C in Capability]: (kind: ProviderKind) => Capabilities[C] | undefined };

/** The table as the routes read it: one lookup per capability, undefined where the kind serves none. */
export function protocolsOf(table: CapabilityTable): Protocols {
  const lookup =
    <C extends Capability>(capability: C) =>
    (kind: ProviderKind): Capabilities[C] | undefined =>
      table[kind]?.[capability] ?? undefined;
  return {
    text: lookup('text'),
    embedding: lookup('embedding'),
    rerank: lookup('rerank'),
    image: lookup('image'),
    speech: lookup('speech'),
    transcription: lookup('transcription'),
    queue: lookup('queue'),
  };
}

/**
 * One protocol object per provider kind, shared by every endpoint of that kind. `watch` is where a protocol
 * reports usage it refused (logged and counted per endpoint); the call itself goes on with the gateway's count.
 */
export function createProtocols(watch: UpstreamWatch): Protocols {
  return protocolsOf(capabilityTable(watch));
}

/** The table createProtocols serves; the conformance suite reads it to find every protocol it must hold to. */
export function capabilityTable(watch: UpstreamWatch): CapabilityTable {
  const malformedUsage = malformedUsageReport(watch);
  const openai = createOpenAIProtocol(process.env, malformedUsage);
  const simulated = createSimulatedProtocol();
  const anthropic = createAnthropicProtocol(process.env, malformedUsage);
  const cohere = createCohereProtocol(process.env, malformedUsage);
  const fal = createFalProtocol();
  // One row per kind, one column per capability, every cell written out: null is a decision, not a default.
  return {
    openai: { text: openai, embedding: openai, rerank: null, image: openai, speech: openai, transcription: openai, queue: null },
    simulated: {
      text: simulated,
      embedding: simulated,
      rerank: simulated,
      image: simulated,
      speech: simulated,
      transcription: simulated,
      queue: simulated,
    },
    anthropic: { text: anthropic, embedding: null, rerank: null, image: null, speech: null, transcription: null, queue: null },
    cohere: { text: null, embedding: null, rerank: cohere, image: null, speech: null, transcription: null, queue: null },
    fal: { text: null, embedding: null, rerank: null, image: null, speech: null, transcription: null, queue: fal },
  };
}
