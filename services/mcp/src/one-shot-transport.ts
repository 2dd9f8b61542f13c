import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';

/**
 * Carries one JSON-RPC request into the SDK's server and its response back out. The SDK's own streamable HTTP
 * transport keeps sessions in process memory; ours live in the database, so the HTTP side is ours and the SDK
 * server sees one request at a time through this.
 */
export class OneShotTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private answer?: (message: JSONRPCMessage) => void;
  private pendingId?: JSONRPCRequest['id'];

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    // Only the response to the request matters; server-to-client messages during a call (progress) have no
    // channel on a JSON answer and are dropped.
    if ('id' in message && ('result' in message || 'error' in message)) this.answer?.(message);
  }

  async close(): Promise<void> {
    // A request still unanswered (its client left) gets an answer nobody reads, so its caller is not left waiting.
    if (this.pendingId !== undefined) this.answer?.({ jsonrpc: '2.0', id: this.pendingId, error: { code: -32603, message: 'Connection closed' } });
    this.onclose?.();
  }

  /** Delivers `request` and resolves with the server's response to it. */
  exchange(request: JSONRPCRequest): Promise<JSONRPCMessage> {
    return new Promise((resolve) => {
      this.pendingId = request.id;
      this.answer = (message) => {
        this.pendingId = undefined;
        this.answer = undefined;
        resolve(message);
      };
      this.onmessage?.(request);
    });
  }
}
