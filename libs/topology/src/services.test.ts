import fs from 'node:fs';
import path from 'node:path';
import {
  ADMIN_OWNER,
  actsForCaller,
  EDGE,
  EMBEDDED_COMMAND,
  isReleaseRequest,
  isReleasedAnswer,
  keyedOwner,
  METRICS_PORT_OFFSET,
  migrateCommand,
  publicOwner,
  releaseRequest,
  releasedAnswer,
  SERVICE_NAMES,
  SERVICES,
  type ServiceName,
  serviceCommand,
  serviceEntry,
} from './index';

const root = path.resolve(__dirname, '..', '..', '..');
const paths = (s: (typeof SERVICES)[number]) => [...s.publicPaths, ...s.keyedPaths] as RegExp[];

/** The service table's rules: what the edge's routing, the fleet and the charts take for granted about it. */
describe('the service table', () => {
  it('names each service once, after a folder of services/ with a main.ts', () => {
    expect(new Set(SERVICE_NAMES).size).toBe(SERVICES.length);
    expect(SERVICE_NAMES).not.toContain(EDGE.name);
    for (const name of SERVICE_NAMES) {
      expect(name).toMatch(/^[a-z]+$/);
      expect(fs.existsSync(path.join(root, 'services', name, 'src', 'main.ts'))).toBe(true);
      expect(serviceCommand(name)).toEqual(['node', '--max-semi-space-size=16', '--single-threaded-gc', '--enable-source-maps', `dist/${name}.cjs`]);
      expect(serviceCommand(name, 'source')).toEqual([
        'node',
        '--max-semi-space-size=16',
        '--single-threaded-gc',
        '--import',
        'tsx',
        `services/${name}/src/main.ts`,
      ]);
    }
    expect(EMBEDDED_COMMAND.at(-1)).toBe('dist/gateway.cjs');
    expect(migrateCommand('billing').slice(-2)).toEqual(['dist/migrate.cjs', 'billing']);
  });

  it('gives every process its own port and its own metrics port, none of them another’s', () => {
    const ports = [EDGE.port, ...SERVICES.map((s) => s.port)];
    const all = [...ports, ...ports.map((p) => p + METRICS_PORT_OFFSET)];
    expect(new Set(all).size).toBe(all.length);
    for (const s of SERVICES) expect(s.port).toBeGreaterThan(EDGE.port);
  });

  it('names each service’s URL variable after it', () => {
    for (const s of SERVICES) expect(s.urlEnv).toBe(`${s.name.toUpperCase()}_URL`);
  });

  it('has peers that are services of the table, never itself, and no cycle, so a start order exists', () => {
    const peersOf = (n: ServiceName) => serviceEntry(n).peers;
    for (const s of SERVICES) {
      for (const p of s.peers) expect(SERVICE_NAMES).toContain(p);
      expect(s.peers).not.toContain(s.name as never);
    }
    // Depth-first: a service reached again while its own peers are being visited closes a cycle.
    const state = new Map<ServiceName, 'visiting' | 'done'>();
    const visit = (n: ServiceName, trail: ServiceName[]) => {
      if (state.get(n) === 'done') return;
      if (state.get(n) === 'visiting') throw new Error(`peer cycle: ${[...trail, n].join(' -> ')}`);
      state.set(n, 'visiting');
      for (const p of peersOf(n)) visit(p, [...trail, n]);
      state.set(n, 'done');
    };
    for (const n of SERVICE_NAMES) visit(n, []);
  });

  it('starts first only services that call no peer: billing, whose holds the others’ requests need', () => {
    for (const s of SERVICES) if ('startsFirst' in s && s.startsFirst) expect(s.peers).toEqual([]);
    expect(serviceEntry('billing').startsFirst).toBe(true);
  });

  it('has exactly one owner of the admin API, and only mcp acts with the caller’s key', () => {
    expect(SERVICES.filter((s) => 'admin' in s && s.admin).map((s) => s.name)).toEqual([ADMIN_OWNER]);
    expect(SERVICE_NAMES.filter(actsForCaller)).toEqual(['mcp']);
  });

  it('anchors every path pattern, so a path is matched whole and never by a prefix of another service’s', () => {
    for (const s of SERVICES) {
      for (const p of paths(s)) {
        // Every path is the API's, but for the status page (HTML from /v1/status, served by its owner).
        expect({ p: p.source, anchored: p.source.startsWith('^\\/v1\\/') || p.source === '^\\/status\\/?$' }).toEqual({
          p: p.source,
          anchored: true,
        });
        expect(p.flags).toBe('');
      }
    }
  });

  it('routes each path of the contract to one owner, and keyed and public paths to the right kind', () => {
    const keyed: [string, ServiceName][] = [
      ['/v1/chat/completions', 'text'],
      ['/v1/messages', 'text'],
      ['/v1/responses', 'text'],
      ['/v1/embeddings', 'text'],
      ['/v1/rerank', 'text'],
      ['/v1/images/generations', 'media'],
      ['/v1/audio/speech', 'media'],
      ['/v1/files/file_1', 'media'],
      ['/v1/queue/a/b', 'jobs'],
      ['/v1/videos/vid_1/content', 'jobs'],
      ['/v1/jobs', 'jobs'],
      ['/v1/key', 'billing'],
      ['/v1/credits/', 'billing'],
      ['/v1/generation', 'billing'],
      ['/v1/generations', 'billing'],
      ['/v1/activity', 'billing'],
      ['/v1/mcp', 'mcp'],
    ];
    for (const [p, owner] of keyed) {
      expect({ p, owner: keyedOwner(p) }).toEqual({ p, owner });
      expect({ p, owner: publicOwner(p) }).toEqual({ p, owner: undefined });
    }
    const open: [string, ServiceName][] = [
      ['/v1/models', 'catalogue'],
      ['/v1/models/count', 'catalogue'],
      ['/v1/model/openai/gpt-4o', 'catalogue'],
      ['/v1/embeddings/models', 'catalogue'],
      ['/v1/status', 'catalogue'],
      ['/status', 'catalogue'],
    ];
    for (const [p, owner] of open) {
      expect({ p, owner: publicOwner(p) }).toEqual({ p, owner });
      expect({ p, owner: keyedOwner(p) }).toEqual({ p, owner: undefined });
    }
    for (const p of [
      '/v1/chat/completions/extra',
      '/v1/mcpx',
      '/v2/models',
      '/admin/v1/accounts',
      '/v1/keys',
      '/v1/generationsx',
      '/v1/activity/x',
      '/statusx',
      '/console',
      '/admin',
    ])
      expect({ p, keyed: keyedOwner(p), open: publicOwner(p) }).toEqual({ p, keyed: undefined, open: undefined });
    // No path of the list above is claimed by a second service.
    for (const [p] of [...keyed, ...open])
      expect({ p, owners: SERVICES.filter((s) => paths(s).some((r) => r.test(p))).length }).toEqual({ p, owners: 1 });
  });

  it('tells the fleet’s port messages apart, and refuses anything else', () => {
    expect(isReleaseRequest(releaseRequest(8081))).toBe(true);
    expect(isReleasedAnswer(releaseRequest(8081))).toBe(false);
    expect(isReleasedAnswer(releasedAnswer(8081))).toBe(true);
    for (const m of [null, 'gateway:release-port', { type: 'gateway:release-port' }, { type: 'gateway:release-port', port: '8081' }])
      expect(isReleaseRequest(m)).toBe(false);
  });
});
