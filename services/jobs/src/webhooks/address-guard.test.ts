import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import ipaddr from 'ipaddr.js';
import { isPublicUnicast } from '@gateway/upstreams';
import { AddressRefusedError, checkTarget, type Resolver } from './address-guard';
import { sendWebhook } from './send';

const TLS_DIR = path.join(__dirname, '../../../../test-e2e/support/tls');

const REFUSED = [
  '127.0.0.1',
  '127.9.9.9',
  '10.0.0.1',
  '10.255.255.255',
  '172.16.0.1',
  '192.168.1.1',
  '169.254.169.254',
  '100.64.0.1',
  '0.0.0.0',
  '224.0.0.1',
  '255.255.255.255',
  '192.0.2.1',
  '::1',
  '::',
  'fc00::1',
  'fd12:3456::1',
  'fe80::1',
  'ff02::1',
  '::ffff:127.0.0.1',
  '::ffff:10.0.0.1',
  '::127.0.0.1',
  '64:ff9b::a00:1',
  '2002:7f00:1::1',
  '2001:db8::1',
];
const PUBLIC = ['8.8.8.8', '93.184.215.14', '2606:4700:4700::1111', '::ffff:8.8.8.8'];

describe('which addresses a webhook may reach', () => {
  it.each(REFUSED)('%s is not a public unicast address', (a) => expect(isPublicUnicast(a)).toBe(false));
  it.each(PUBLIC)('%s is', (a) => expect(isPublicUnicast(a)).toBe(true));
  it('a malformed address is not', () => expect(isPublicUnicast('10.0.0.256')).toBe(false));
});

describe('checkTarget', () => {
  const urlOf = (ip: string) => `https://${net.isIPv6(ip) ? `[${ip}]` : ip}:8443/hook`;
  const resolveTo =
    (...addresses: string[]): Resolver =>
    async () =>
      addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));

  it.each(['127.0.0.1', '10.1.2.3', '192.168.0.10', '169.254.169.254', '::1', 'fc00::1', '::ffff:127.0.0.1'])(
    'refuses %s by default, as a literal and as a name resolving to it, and allows it with allow_private_addresses',
    async (ip) => {
      await expect(checkTarget(urlOf(ip), { allowPrivateAddresses: false })).rejects.toThrow(AddressRefusedError);
      await expect(checkTarget('https://hooks.example/x', { allowPrivateAddresses: false, resolve: resolveTo(ip) })).rejects.toThrow(
        /not a public address/,
      );
      const same = (a: string) => ipaddr.parse(a).toNormalizedString();
      expect(same((await checkTarget(urlOf(ip), { allowPrivateAddresses: true })).address)).toBe(same(ip));
      expect((await checkTarget('https://hooks.example/x', { allowPrivateAddresses: true, resolve: resolveTo(ip) })).address).toBe(ip);
    },
  );

  it('refuses a name when any one of its addresses is private', async () => {
    await expect(checkTarget('https://hooks.example/', { allowPrivateAddresses: false, resolve: resolveTo('8.8.8.8', '10.0.0.1') })).rejects.toThrow(
      /10\.0\.0\.1/,
    );
  });

  it('pins a public name to its first checked address, keeping the hostname for TLS', async () => {
    const t = await checkTarget('https://hooks.example:8443/x?y=1', { allowPrivateAddresses: false, resolve: resolveTo('8.8.8.8', '8.8.4.4') });
    expect(t).toMatchObject({ hostname: 'hooks.example', address: '8.8.8.8', family: 4 });
    expect(t.url.href).toBe('https://hooks.example:8443/x?y=1');
  });

  it('refuses http (even with allow_private_addresses), other schemes, and non-URLs', async () => {
    await expect(checkTarget('http://8.8.8.8/hook', { allowPrivateAddresses: true })).rejects.toThrow(/must use https/);
    await expect(checkTarget('ftp://8.8.8.8/hook', { allowPrivateAddresses: true })).rejects.toThrow(/must use https/);
    await expect(checkTarget('not a url', { allowPrivateAddresses: true })).rejects.toThrow(AddressRefusedError);
  });

  it('refuses a name that does not resolve', async () => {
    const failing: Resolver = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    await expect(checkTarget('https://nowhere.example/', { allowPrivateAddresses: false, resolve: failing })).rejects.toThrow(/ENOTFOUND/);
    await expect(checkTarget('https://nowhere.example/', { allowPrivateAddresses: false, resolve: async () => [] })).rejects.toThrow(/no address/);
  });
});

/** A TLS listener that records each connection and the SNI name it asked for (seen before any certificate check). */
async function listen(host: string, port: number, kind: 'tls' | 'tcp') {
  const connections: string[] = [];
  const servernames: string[] = [];
  const ctx = tls.createSecureContext({
    key: fs.readFileSync(path.join(TLS_DIR, 'localhost.key')),
    cert: fs.readFileSync(path.join(TLS_DIR, 'localhost.crt')),
  });
  const server =
    kind === 'tls'
      ? tls.createServer({
          SNICallback: (name, cb) => {
            servernames.push(name);
            cb(null, ctx);
          },
        })
      : net.createServer((s) => s.destroy());
  server.on('connection', (s: net.Socket) => connections.push(s.localAddress ?? '?'));
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections,
    servernames,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('DNS rebinding: the connection goes to the address that was checked', () => {
  const attempt = (url: string, resolve: Resolver, allowPrivateAddresses: boolean) =>
    sendWebhook({ url, id: 'whd_rebind', body: '{}', secret: 's', timestamp: 1, allowPrivateAddresses, resolve, timeoutMs: 1500 });

  it('dials the checked address with the hostname as SNI, never a later answer of the resolver', async () => {
    const genuine = await listen('127.0.0.1', 0, 'tls');
    const attacker = await listen('127.0.0.2', genuine.port, 'tcp');
    let lookups = 0;
    // First answer: the genuine receiver; every later one: the attacker's address on the same port.
    const rebinding: Resolver = async () => [{ address: ++lookups === 1 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
    try {
      const result = await attempt(`https://receiver.example:${genuine.port}/hook`, rebinding, true);
      expect(result.address).toBe('127.0.0.1');
      expect(lookups).toBe(1);
      expect(genuine.connections).toEqual(['127.0.0.1']);
      expect(genuine.servernames).toEqual(['receiver.example']);
      expect(attacker.connections).toEqual([]);
    } finally {
      await genuine.close();
      await attacker.close();
    }
  });

  it('a name that answers public at the check and loopback afterwards never reaches loopback', async () => {
    const local = await listen('127.0.0.1', 0, 'tls');
    let lookups = 0;
    const rebinding: Resolver = async () => [{ address: ++lookups === 1 ? '93.184.215.14' : '127.0.0.1', family: 4 }];
    try {
      const result = await attempt(`https://receiver.example:${local.port}/hook`, rebinding, false);
      expect(result.address).toBe('93.184.215.14');
      expect(result.outcome).not.toBe('delivered');
      expect(result.error).toContain('93.184.215.14');
      expect(lookups).toBe(1);
      expect(local.connections).toEqual([]);
    } finally {
      await local.close();
    }
  });

  it('a private target is refused by default without any connection', async () => {
    const local = await listen('127.0.0.1', 0, 'tls');
    try {
      const result = await attempt(`https://localhost:${local.port}/hook`, async () => [{ address: '127.0.0.1', family: 4 }], false);
      expect(result).toMatchObject({ outcome: 'refused', statusCode: null, address: undefined });
      expect(result.error).toMatch(/refused: localhost resolves to 127\.0\.0\.1/);
      const literal = await attempt(`https://127.0.0.1:${local.port}/hook`, async () => [], false);
      expect(literal.outcome).toBe('refused');
      expect(local.connections).toEqual([]);
    } finally {
      await local.close();
    }
  });

  it('http is refused before any connection, even with allow_private_addresses', async () => {
    const local = await listen('127.0.0.1', 0, 'tcp');
    try {
      const result = await attempt(`http://127.0.0.1:${local.port}/hook`, async () => [], true);
      expect(result).toMatchObject({ outcome: 'refused', statusCode: null });
      expect(result.error).toMatch(/must use https/);
      expect(local.connections).toEqual([]);
    } finally {
      await local.close();
    }
  });
});
