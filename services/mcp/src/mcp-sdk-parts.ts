/**
 * Everything POST /v1/mcp takes from the MCP SDK, loaded by mcp-sdk.ts at the first call. Nothing that runs at start
 * may import these (mcp-sdk.test.ts checks that the service loads without the SDK).
 */
export { isInitializeRequest, isJSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
export { messagesOf } from './body';
export { exchange } from './exchange';
export { setLevel } from './set-level';
