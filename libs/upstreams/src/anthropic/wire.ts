/** The message API's wire shapes, as far as the gateway reads or writes them. */

/** A prompt-caching breakpoint (`{type: "ephemeral", ttl?}`), forwarded as the client sent it. */
export type CacheControl = Record<string, unknown>;
export type TextBlock = { type: 'text'; text: string; cache_control?: CacheControl };
export type ImageBlock = {
  type: 'image';
  source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };
  cache_control?: CacheControl;
};
export type ToolUseBlock = { type: 'tool_use'; id: string; name: string; input: unknown };
export type ToolResultBlock = { type: 'tool_result'; tool_use_id: string; content: string };
export type Block = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock;

export interface Turn {
  role: 'user' | 'assistant';
  content: string | Block[];
}

export type ToolChoice =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export interface MessagesRequest {
  model: string;
  messages: Turn[];
  max_tokens: number;
  system?: string | TextBlock[];
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: { user_id: string };
  tools?: Array<{ name: string; description?: string; input_schema: unknown; cache_control?: CacheControl }>;
  tool_choice?: ToolChoice;
  stream: boolean;
}

export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/** Content blocks of an answer; kinds the gateway does not translate (thinking, server tools) are skipped. */
export type AnswerBlock = TextBlock | ToolUseBlock | { type: string; [k: string]: unknown };

export interface MessagesAnswer {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: AnswerBlock[];
  stop_reason?: string | null;
  stop_sequence?: string | null;
  /** Absent when the upstream reported none, or none the gateway would bill (anthropic/schema.ts). */
  usage?: MessagesUsage;
}
