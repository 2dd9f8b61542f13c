import dns from 'node:dns';
import net from 'node:net';
import { Agent, buildConnector } from 'undici';

/**
 * Where an upstream's answer may send the gateway: a generated file's URL (GET /v1/files streams it from there) or a
 * file a job's result links to. Those URLs come from outside, so a fetch of one must not reach the gateway's own
 * network: loopback, private, link-local (the cloud metadata service at 169.254.169.254), unique-local IPv6 and every
 * other special range are refused, IPv4-mapped IPv6 judged as the IPv4 it carries. The origins of the configured
 * providers' base_url are the exception: the operator chose them, wherever they are.
 */

/** The attempt was not made: the address is not one the gateway fetches upstream files from. */
export class OriginRefusedError extends Error {
  override name = 'OriginRefusedError';
}

const SPECIAL = new net.BlockList();
for (const [net4, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  SPECIAL.addSubnet(net4, bits, 'ipv4');
// IPv6 must be global unicast (2000::/3, checked below); inside it these are special too: Teredo, documentation,
// 6to4 and NAT64's local prefix, whose embedded IPv4 could be anything.
for (const [net6, bits] of [
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
] as const)
  SPECIAL.addSubnet(net6, bits, 'ipv6');
const GLOBAL_UNICAST_V6 = new net.BlockList();
GLOBAL_UNICAST_V6.addSubnet('2000::', 3, 'ipv6');

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d, or its hex form ::ffff:a9fe:a9fe) as the IPv4 it carries. */
function mappedIPv4(address: string): string | undefined {
  const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1];
  const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const hi = Number.parseInt(hex[1], 16);
  const lo = Number.parseInt(hex[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Public unicast only: what a fetch of a URL an upstream named may connect to. */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const v4 = net.isIPv4(bare) ? bare : net.isIPv6(bare) ? mappedIPv4(bare) : undefined;
  if (v4 !== undefined) return net.isIPv4(v4) && !SPECIAL.check(v4, 'ipv4');
  if (!net.isIPv6(bare)) return false;
  return GLOBAL_UNICAST_V6.check(bare, 'ipv6') && !SPECIAL.check(bare, 'ipv6');
}

export type Resolve = (hostname: string) => Promise<{ address: string; family: number }[]>;
const systemResolve: Resolve = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** `scheme://host[:port]` as URL.origin writes it (default ports dropped), or undefined for a malformed one. */
export function originOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

export interface GuardOptions {
  /** Origins reached whatever their address (the providers' base_url origins). */
  trustedOrigins: Iterable<string>;
  resolve?: Resolve;
  connectTimeoutMs?: number;
}

/**
 * An undici dispatcher that connects only to trusted origins and to public addresses. Each connection (redirects
 * included, since they connect through it too) resolves the host once, refuses it when any of its addresses is not
 * public, and dials the address it checked, so a DNS answer that changes afterwards cannot redirect it. TLS still
 * sends SNI and verifies the certificate for the URL's hostname.
 */
export function guardedAgent(opts: GuardOptions): Agent {
  const trusted = new Set([...opts.trustedOrigins].map(originOf).filter((o): o is string => o !== undefined));
  const resolve = opts.resolve ?? systemResolve;
  const timeout = opts.connectTimeoutMs ?? 10_000;
  const connector = buildConnector({ timeout });
  return new Agent({
    keepAliveTimeout: 30_000,
    connect: (options, callback) => {
      const hostname = options.hostname.replace(/^\[|\]$/g, '');
      const host = net.isIPv6(hostname) ? `[${hostname}]` : hostname;
      const origin = originOf(`${options.protocol}//${host}${options.port ? `:${options.port}` : ''}`);
      if (origin !== undefined && trusted.has(origin)) return void connector(options, callback);
      const literal = net.isIP(hostname) ? [{ address: hostname, family: net.isIP(hostname) }] : undefined;
      (literal ? Promise.resolve(literal) : resolve(hostname)).then(
        (addresses) => {
          const refused = addresses.length === 0 ? hostname : addresses.find((a) => !isPublicAddress(a.address))?.address;
          if (refused !== undefined)
            return callback(new OriginRefusedError(`${hostname} resolves to ${refused}, which is not a public address`), null);
          const servername = literal ? undefined : hostname;
          connector({ ...options, hostname: addresses[0].address, ...(servername ? { servername } : {}) }, callback);
        },
        (e: Error & { code?: string }) => callback(new OriginRefusedError(`cannot resolve ${hostname}: ${e.code ?? e.message}`), null),
      );
    },
  });
}
