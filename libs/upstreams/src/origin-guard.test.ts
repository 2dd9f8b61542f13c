import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { guardedAgent, isPublicUnicast, OriginRefusedError, type Resolve } from './origin-guard';

const REFUSED = [
  '127.0.0.1',
  '127.255.0.9',
  '10.0.0.1',
  '10.255.255.254',
  '172.16.0.1',
  '172.31.255.1',
  '192.168.1.1',
  '169.254.169.254',
  '169.254.0.1',
  '100.64.0.1',
  '0.0.0.0',
  '224.0.0.1',
  '255.255.255.255',
  '192.0.2.1',
  '::1',
  '::',
  'fd00::1',
  'fd12:3456:789a::1',
  'fc00::1',
  'fe80::1',
  'ff02::1',
  '::ffff:127.0.0.1',
  '::ffff:10.0.0.1',
  '::ffff:169.254.169.254',
  '::ffff:a9fe:a9fe',
  '0:0:0:0:0:ffff:7f00:1',
  '[::ffff:7f00:1]',
  '::127.0.0.1',
  '64:ff9b::a9fe:a9fe',
  '2002:a9fe:a9fe::1',
  '2001::1',
  '2001:db8::1',
  'localhost',
  '10.0.0.256',
];
const PUBLIC = ['8.8.8.8', '93.184.215.14', '2606:4700:4700::1111', '2a00:1450:4001::1', '::ffff:8.8.8.8', '::ffff:808:808'];

describe('which addresses an upstream-named URL may reach', () => {
  it.each(REFUSED)('%s is refused', (a) => expect(isPublicUnicast(a)).toBe(false));
  it.each(PUBLIC)('%s is public', (a) => expect(isPublicUnicast(a)).toBe(true));
});

/** A plain HTTP server that counts connections: the proof that a refused fetch never reached it. */
async function server(handler: http.RequestListener = (_req, res) => void res.end('secret')) {
  const s = http.createServer(handler);
  let connections = 0;
  s.on('connection', () => connections++);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    connections: () => connections,
    close: () => new Promise<void>((r) => s.close(() => r())),
  };
}

describe('guardedAgent', () => {
  let internal: Awaited<ReturnType<typeof server>>;
  beforeAll(async () => {
    internal = await server();
  });
  afterAll(() => internal.close());

  const fetchVia = async (agent: ReturnType<typeof guardedAgent>, url: string) => {
    try {
      const r = await request(url, { dispatcher: agent, maxRedirections: 3 });
      return { status: r.statusCode, body: await r.body.text() };
    } catch (e) {
      return { error: e };
    } finally {
      await agent.close();
    }
  };

  it('refuses a loopback, private or metadata address before connecting, as a literal or as a name resolving to one', async () => {
    const before = internal.connections();
    for (const url of [
      `${internal.origin}/x.png`,
      `http://localhost:${internal.port}/x.png`,
      `http://[::ffff:127.0.0.1]:${internal.port}/x.png`,
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00::1]/x.png',
      'http://2130706433/x.png', // 127.0.0.1 written as one number; URL parsing makes it a dotted quad
    ]) {
      const got = await fetchVia(guardedAgent({ trustedOrigins: [] }), url);
      expect({ url, refused: got.error instanceof OriginRefusedError }).toEqual({ url, refused: true });
    }
    const rebinding: Resolve = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ];
    const mixed = await fetchVia(guardedAgent({ trustedOrigins: [], resolve: rebinding }), 'http://cdn.example/x.png');
    expect(mixed.error).toBeInstanceOf(OriginRefusedError);
    expect(String((mixed.error as Error).message)).toMatch(/10\.0\.0\.7/);
    expect(internal.connections()).toBe(before);
  });

  it("reaches a provider's own origin (the operator's choice), wherever it is", async () => {
    expect(await fetchVia(guardedAgent({ trustedOrigins: [`${internal.origin}/v1`] }), `${internal.origin}/x.png`)).toEqual({
      status: 200,
      body: 'secret',
    });
  });

  it("refuses a redirect from a provider's origin to an address that is not public", async () => {
    const provider = await server((_req, res) => void res.writeHead(302, { location: `${internal.origin}/internal` }).end());
    try {
      const before = internal.connections();
      const got = await fetchVia(guardedAgent({ trustedOrigins: [provider.origin] }), `${provider.origin}/file.png`);
      expect(got.error).toBeInstanceOf(OriginRefusedError);
      expect(provider.connections()).toBeGreaterThan(0);
      expect(internal.connections()).toBe(before);
    } finally {
      await provider.close();
    }
  });
});
