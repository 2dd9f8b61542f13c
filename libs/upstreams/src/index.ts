export type { ChatChunk, ChatCompletion, ChatUsage, CallOptions, TextProtocol } from './types';
export { UpstreamError, classify, type FailureKind } from './upstream-error';
export { countTokens, maxTokensOf } from './tokens';
export { sseData } from './sse';
export { createOpenAIProtocol } from './openai';
export { createSimulatedProtocol } from './simulated';
import type { ProviderConfig } from '@gateway/config';
import type { TextProtocol } from './types';
import { createOpenAIProtocol } from './openai';
import { createSimulatedProtocol } from './simulated';

/** One protocol object per provider kind, shared by every endpoint of that kind. */
export function textProtocols(): (kind: ProviderConfig['kind']) => TextProtocol | undefined {
  const openai = createOpenAIProtocol();
  const simulated = createSimulatedProtocol();
  return (kind) => (kind === 'openai' ? openai : kind === 'simulated' ? simulated : undefined);
}
