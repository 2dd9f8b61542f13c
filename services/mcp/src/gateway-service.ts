import type { GatewayService } from '@gateway/service-kit';
import type { McpService } from './service';

/**
 * MCP in the one lifecycle: open streams end as shutdown begins (the drain would otherwise wait its whole grace
 * period on them), and it unsubscribes before the bus closes. Its database is the host's to close.
 */
export function mcpService(mcp: McpService): GatewayService {
  return {
    name: 'mcp',
    routers: { public: mcp.router },
    start: mcp.start,
    preClose: mcp.endStreams,
    drain: mcp.stop,
  };
}
