import type { ResolvedEndpoint } from '@gateway/config';

/** OpenAI chat-completions shapes: the gateway's internal lingua franca for text. */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: string; content: string | null; [k: string]: unknown };
    finish_reason: string | null;
    [k: string]: unknown;
  }>;
  usage?: ChatUsage;
  [k: string]: unknown;
}

export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: { role?: string; content?: string | null; [k: string]: unknown };
    finish_reason: string | null;
    [k: string]: unknown;
  }>;
  usage?: ChatUsage | null;
  [k: string]: unknown;
}

export interface CallOptions {
  signal: AbortSignal;
  requestId: string;
  /** The model's max_output_tokens, for protocols that must always send a limit (the message API). */
  maxOutputTokens?: number;
}

/** One upstream protocol: translates the gateway's chat call into the provider's and normalises the answer. */
export interface TextProtocol {
  chat(endpoint: ResolvedEndpoint, body: Record<string, unknown>, opts: CallOptions): Promise<ChatCompletion>;
  /** Resolves once the upstream has accepted the call (status and headers in), so failover can still happen. */
  chatStream(endpoint: ResolvedEndpoint, body: Record<string, unknown>, opts: CallOptions): Promise<AsyncIterable<ChatChunk>>;
}

/** Embeddings, in the OpenAI shape, float vectors; the route encodes base64 itself. */
export interface EmbeddingRequest {
  input: string[] | number[][];
  dimensions?: number;
  user?: string;
}

export interface EmbeddingResult {
  data: Array<{ index: number; embedding: number[] }>;
  usage?: { prompt_tokens: number };
}

export interface EmbeddingProtocol {
  embed(endpoint: ResolvedEndpoint, body: EmbeddingRequest, opts: CallOptions): Promise<EmbeddingResult>;
}

/** Rerank, in the Cohere shape: `index` is the position in the request's document list. */
export interface RerankRequest {
  query: string;
  documents: string[];
  top_n?: number;
}

export interface RerankResult {
  results: Array<{ index: number; relevance_score: number }>;
  /** Billed units the upstream reported, when it reports any. */
  usage?: { total_tokens?: number; search_units?: number };
}

export interface RerankProtocol {
  rerank(endpoint: ResolvedEndpoint, body: RerankRequest, opts: CallOptions): Promise<RerankResult>;
}
