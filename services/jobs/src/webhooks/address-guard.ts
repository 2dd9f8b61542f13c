import dns from 'node:dns';
import net from 'node:net';
import { isPublicUnicast } from '@gateway/upstreams';
import { Agent, buildConnector } from 'undici';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Every address a hostname resolves to. Injectable so tests can answer differently on each call (DNS rebinding). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dns.promises.lookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/** The attempt was not made: the URL or an address it resolves to is not allowed. */
export class AddressRefusedError extends Error {
  override name = 'AddressRefusedError';
}

/** Where one attempt goes: the URL as given, and the one address that was checked and will be dialled. */
export interface PinnedTarget {
  url: URL;
  hostname: string;
  address: string;
  family: 4 | 6;
}

/**
 * Checks a webhook URL at delivery time and picks the address to dial. https only. Every address the host resolves to
 * must be public unless `allowPrivateAddresses`: one private answer among public ones refuses the whole host, since
 * which one a client would use is not ours to predict. Resolved once, here; the connection then goes to this address.
 */
export async function checkTarget(rawUrl: string, opts: { resolve?: Resolver; allowPrivateAddresses: boolean }): Promise<PinnedTarget> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new AddressRefusedError('webhook URL is not a valid URL');
  }
  if (url.protocol !== 'https:') throw new AddressRefusedError(`webhook URL must use https, not ${url.protocol.replace(/:$/, '')}`);
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const family = net.isIP(hostname);
  const addresses: ResolvedAddress[] = family
    ? [{ address: hostname, family: family === 6 ? 6 : 4 }]
    : await (opts.resolve ?? systemResolver)(hostname).catch((e: Error & { code?: string }) => {
        throw new AddressRefusedError(`cannot resolve ${hostname}: ${e.code ?? e.message}`);
      });
  if (addresses.length === 0) throw new AddressRefusedError(`${hostname} resolves to no address`);
  if (!opts.allowPrivateAddresses) {
    const refused = addresses.find((a) => !isPublicUnicast(a.address));
    if (refused) throw new AddressRefusedError(`${hostname} resolves to ${refused.address}, which is not a public address`);
  }
  return { url, hostname, address: addresses[0].address, family: addresses[0].family };
}

/**
 * A dispatcher that can reach only the pinned address: the socket is opened to the checked IP (no second lookup, so
 * a DNS answer that changes after the check cannot redirect it), while TLS still sends SNI and verifies the certificate
 * for the URL's hostname. For an IP-literal URL the certificate must name that IP. One per attempt; close it after.
 */
export function pinnedAgent(target: PinnedTarget, opts: { connectTimeoutMs: number }): Agent {
  const servername = net.isIP(target.hostname) ? undefined : target.hostname;
  const connector = buildConnector({ timeout: opts.connectTimeoutMs, ...(servername ? { servername } : {}) });
  return new Agent({
    connections: 1,
    pipelining: 0,
    connect: (options, callback) => {
      // Only the checked origin: nothing else (such as a redirect's target, which we never follow anyway) may use this agent.
      if (options.hostname.replace(/^\[|\]$/g, '') !== target.hostname) {
        callback(new AddressRefusedError(`connection to ${options.hostname} refused: this attempt is pinned to ${target.hostname}`), null);
        return;
      }
      connector({ ...options, hostname: target.address, ...(servername ? { servername } : {}) }, callback);
    },
  });
}
