describe('the MCP SDK', () => {
  it('is not loaded when the service is, only by the first POST /v1/mcp (mcpSdk)', () => {
    const loaded: string[] = [];
    jest.isolateModules(() => {
      for (const entry of ['@modelcontextprotocol/sdk/types.js', '@modelcontextprotocol/sdk/server/mcp.js'])
        jest.doMock(entry, () => {
          loaded.push(entry);
          return jest.requireActual(entry);
        });
      const { mcpSdk } = require('./mcp-sdk') as typeof import('./mcp-sdk');
      require('./index');
      expect(loaded).toEqual([]);
      expect(typeof mcpSdk().exchange).toBe('function');
      expect(loaded.sort()).toEqual(['@modelcontextprotocol/sdk/server/mcp.js', '@modelcontextprotocol/sdk/types.js']);
    });
  });
});
