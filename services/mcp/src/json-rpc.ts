import type { Response } from 'express';

/** JSON-RPC error codes this endpoint answers with. */
export const RPC = { invalidRequest: -32600, methodNotFound: -32601, invalidParams: -32602, internal: -32603, server: -32000 } as const;

type Id = string | number | null;

export interface RpcError {
  jsonrpc: '2.0';
  id: Id;
  error: { code: number; message: string; data?: Record<string, unknown> };
}

/** `data` carries the gateway's error code where the refusal is one of its own (rate_limited), for clients to branch on. */
export function rpcError(id: Id, code: number, message: string, data?: Record<string, unknown>): RpcError {
  return { jsonrpc: '2.0', id, error: data ? { code, message, data } : { code, message } };
}

/**
 * The contract's session errors are JSON-RPC, not the gateway envelope: an unknown, ended or another account's
 * session answers 404 with -32600; a call with no session id at all 400 with -32600.
 */
export function sessionError(res: Response, status: 400 | 404, id: Id, message: string): void {
  res.status(status).json(rpcError(id, RPC.invalidRequest, message));
}

/** The id of the first request in a body, for an error about the whole call. */
export function firstId(messages: unknown[]): Id {
  for (const m of messages) {
    const id = (m as { id?: unknown }).id;
    if (typeof id === 'string' || typeof id === 'number') return id;
  }
  return null;
}
