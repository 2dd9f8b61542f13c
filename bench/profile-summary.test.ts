import { type CpuProfile, summarizeProfile } from './profile-summary';

/** A profile of one stack per leaf, each leaf sampled once for 1 ms. */
function profileOf(stacks: Array<Array<{ functionName: string; url: string }>>): CpuProfile {
  const nodes: CpuProfile['nodes'] = [{ id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: 0, columnNumber: 0 }, children: [] }];
  const leaves: number[] = [];
  for (const stack of stacks) {
    let parent = nodes[0];
    for (const frame of stack) {
      const node = { id: nodes.length + 1, callFrame: { ...frame, lineNumber: 0, columnNumber: 0 }, children: [] as number[] };
      nodes.push(node);
      parent.children?.push(node.id);
      parent = node;
    }
    leaves.push(parent.id);
  }
  return { nodes, startTime: 0, endTime: 1_000 * leaves.length, samples: leaves, timeDeltas: leaves.map(() => 1_000) };
}

describe('summarizeProfile', () => {
  it("files a WebAssembly frame under the script that called into it: undici's HTTP parser, or PGlite", () => {
    const undici = { functionName: 'execute', url: 'file:///app/node_modules/undici/lib/dispatcher/client-h1.js' };
    const pglite = { functionName: 'execProtocol', url: 'file:///app/node_modules/@electric-sql/pglite/dist/index.js' };
    const wasm = { functionName: 'wasm-function[20]', url: 'wasm://wasm/0badc0de' };
    const summary = summarizeProfile(
      'CPU.20261129.200000.1.0.001.cpuprofile',
      profileOf([
        [undici, wasm],
        [pglite, wasm, wasm],
      ]),
      {},
    );
    const areas = Object.fromEntries(summary.areas.map((a) => [a.area, a.samples]));
    expect(areas).toEqual({ 'undici (llhttp, its HTTP parser: WebAssembly)': 1, 'pglite (WebAssembly: Postgres itself)': 1 });
  });
});
