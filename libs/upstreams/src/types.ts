import type { ResolvedEndpoint } from '@gateway/config';

/** OpenAI chat-completions shapes: the gateway's internal lingua franca for text. */
export interface ChatUsage {
  /** Every prompt token, those the upstream's cache served or took included (the OpenAI convention). */
  prompt_tokens: number;
  /** Every output token, reasoning included. */
  completion_tokens: number;
  total_tokens?: number;
  /**
   * Of prompt_tokens: read from the upstream's prompt cache (`cached_tokens`), written to it (`cache_write_tokens`,
   * the message API's cache creation). Other detail fields the upstream sends pass through.
   */
  prompt_tokens_details?: { cached_tokens?: number | null; cache_write_tokens?: number | null; [k: string]: unknown } | null;
  /** Of completion_tokens: the model's reasoning. */
  completion_tokens_details?: { reasoning_tokens?: number | null; [k: string]: unknown } | null;
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
  /**
   * Aborts the call when the client leaves (streams). Calls whose answer is settled whatever the client does pass
   * none: a signal per call costs an AbortController and undici's listener on it, on every billed request.
   */
  signal?: AbortSignal;
  requestId: string;
  /** The model's max_output_tokens: the message API, which requires a limit, sends it when the call has none, and never one above it. */
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

/** One image generation call; the route has validated `n` (1 to 10) and resolved which size fields win. */
export interface ImageRequest {
  prompt: string;
  n: number;
  /** Dimensions (1024x1024), a ratio or a tier, forwarded as the route passes it. */
  size?: string;
  aspectRatio?: string;
  resolution?: string;
  quality?: string;
  referenceUrls?: string[];
  /** Other body fields the model takes, passed through; the named fields above win over them. */
  extra?: Record<string, unknown>;
}

/** An image the upstream hosts (the media service fetches it), or one it sent inline. */
export type GeneratedImage = { kind: 'url'; url: string } | { kind: 'bytes'; bytes: Buffer; contentType: string };

export interface ImageResult {
  /** At most `n`; fewer when the upstream made fewer, never none. */
  images: GeneratedImage[];
}

export interface ImageProtocol {
  generateImages(endpoint: ResolvedEndpoint, req: ImageRequest, opts: CallOptions): Promise<ImageResult>;
}

export type SpeechFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';

export interface SpeechRequest {
  input: string;
  voice: string;
  responseFormat: SpeechFormat;
  speed: number;
}

/** Resolves once the upstream answered 2xx with its head: failover can still happen before the first byte. */
export interface SpeechAudio {
  contentType: string;
  /** The audio as it arrives; iterating it fails with an UpstreamError when the upstream breaks off. */
  body: AsyncIterable<Uint8Array>;
}

export interface SpeechProtocol {
  speech(endpoint: ResolvedEndpoint, req: SpeechRequest, opts: CallOptions): Promise<SpeechAudio>;
}

export type TranscriptFormat = 'json' | 'text' | 'srt' | 'verbose_json' | 'vtt';

export interface TranscriptionRequest {
  audio: Buffer;
  /** Container name (wav, mp3, ...), as the client named it. */
  format: string;
  language?: string;
  responseFormat: TranscriptFormat;
  timestampGranularities?: Array<'word' | 'segment'>;
  /**
   * The gateway's own measure of the recording (seconds), for an upstream that needs a timeline and has no decoder:
   * the simulator times its made-up words on it. Real providers measure for themselves and are not sent it.
   */
  measuredSeconds?: number;
}

export interface TranscriptionResult {
  contentType: string;
  /** The upstream's answer, verbatim (json and verbose_json as text too). */
  body: string;
  /** Seconds of audio the upstream reported (verbose_json's `duration`, or a usage field), when it reported any. */
  durationSeconds?: number;
}

export interface TranscriptionProtocol {
  transcribe(endpoint: ResolvedEndpoint, req: TranscriptionRequest, opts: CallOptions): Promise<TranscriptionResult>;
}

/** The upstream's handle on a queued request: its id, and the URLs it answered with when it answered any. */
export interface QueueTicket {
  upstreamId: string;
  statusUrl?: string;
  responseUrl?: string;
  cancelUrl?: string;
}

export interface QueueLog {
  message: string;
  level: string;
  /** ISO 8601. */
  timestamp: string;
}

export interface QueueStatus {
  state: 'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED';
  /** The upstream's own queue position, when it reports one. */
  queuePosition: number | null;
  /** Present when asked for (`logs: true`); the upstream's lines, verbatim. */
  logs: QueueLog[];
  /** Seconds of inference the upstream reported, when it reported any. */
  inferenceTime: number | null;
}

/**
 * A fal-style queue: submit returns at once, then status, result and cancel by the upstream's request id.
 * The input is the model's own, passed through untouched. Failures are UpstreamErrors: `clientFault` when the
 * upstream refused the input (content policy, a 4xx), which ends the job as a 400; anything else fails over
 * (submit) or fails the job as a 503 (result).
 */
export interface QueueProtocol {
  submit(endpoint: ResolvedEndpoint, input: Record<string, unknown>, opts: CallOptions): Promise<QueueTicket>;
  status(endpoint: ResolvedEndpoint, ticket: QueueTicket, opts: { logs: boolean; signal: AbortSignal }): Promise<QueueStatus>;
  /** The finished request's output, verbatim; throws the upstream's failure when the request failed. */
  result(endpoint: ResolvedEndpoint, ticket: QueueTicket, opts: { signal: AbortSignal }): Promise<Record<string, unknown>>;
  /** Best effort: resolves whether or not the upstream could still stop it. */
  cancel(endpoint: ResolvedEndpoint, ticket: QueueTicket, opts: { signal: AbortSignal }): Promise<void>;
  /** Fetches a media file the result links to (the gateway re-serves it under /v1/files; upstream URLs never reach clients). */
  download(endpoint: ResolvedEndpoint, url: string, opts: { signal: AbortSignal }): Promise<{ bytes: Buffer; contentType: string }>;
}
