import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
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

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
/** IETF protocol assignments (RFC 2928): inside 2000::/3, yet no one's public host; ipaddr.js names only parts of it. */
const IETF_PROTOCOL_ASSIGNMENTS = ipaddr.parseCIDR('2001::/23');

/**
 * Public unicast only: what a fetch of a URL from outside may connect to (a file an upstream named, a webhook).
 * IPv4-mapped IPv6 is judged as the IPv4 it carries; a bracketed literal as the address inside. Everything ipaddr.js
 * names a special range is refused: loopback, private, linkLocal, uniqueLocal, carrierGradeNat, reserved,
 * unspecified, multicast, broadcast, and the translation and tunnel prefixes (NAT64, 6to4, Teredo), whose embedded
 * IPv4 could be anything. IPv6 must further lie in 2000::/3 (ipaddr.js calls the deprecated IPv4-compatible
 * ::a.b.c.d "unicast") and outside 2001::/23.
 */
export function isPublicUnicast(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return false;
  const ip = ipaddr.process(bare);
  if (ip.range() !== 'unicast') return false;
  if (ip.kind() === 'ipv4') return true;
  const v6 = ip as ipaddr.IPv6;
  return v6.match(GLOBAL_UNICAST_V6) && !v6.match(IETF_PROTOCOL_ASSIGNMENTS);
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
          const refused = addresses.length === 0 ? hostname : addresses.find((a) => !isPublicUnicast(a.address))?.address;
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
