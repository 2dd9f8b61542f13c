import type { ModelRegistry } from '@gateway/config';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { EdgeClient } from '../edge-client';
import type { SessionStore } from '../sessions';
import type { Notifier } from '../stream/notifier';

/** Who is calling: the session and the key the edge verified, which the tools spend with. */
export interface Caller {
  key: string;
  accountId: string;
  keyId: string;
  sessionId: string;
}

export interface ToolDeps {
  edge: EdgeClient;
  sessions: SessionStore;
  /** The configured models, for quotes (the same rates and caps the spending routes hold with). */
  registry: ModelRegistry;
  notifier: Notifier;
}

export interface ToolContext {
  caller: Caller;
  deps: ToolDeps;
  /** Fires when the client cancels the request or goes away. */
  signal: AbortSignal;
}

export interface ToolDef<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  /**
   * A sample path of each gateway route the tool calls. The tool is listed only when the service table has an owner
   * for every one of them, so a tool whose route is not built yet is never offered.
   */
  routes: string[];
  input: I;
  output: O;
  run(args: z.infer<I>, ctx: ToolContext): Promise<CallToolResult>;
}

/** Keeps each tool's `run` typed by its own input schema. */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(tool: ToolDef<I, O>): ToolDef<I, O> {
  return tool;
}
