import { AddressRefusedError, checkTarget } from './address-guard';

/**
 * SSRF through the spellings of an address: every way a URL can name loopback, a private network or the metadata
 * service must be refused at delivery like the plain dotted form (the URL parser and the resolver see through them).
 */
describe('webhook targets written to slip past a check', () => {
  it.each([
    ['https://2130706433/hook', 'one decimal number (127.0.0.1)'],
    ['https://0x7f000001/hook', 'one hex number'],
    ['https://0177.0.0.1/hook', 'octal parts'],
    ['https://127.1/hook', 'a shortened dotted form'],
    ['https://0xa9.0xfe.0xa9.0xfe/latest/meta-data/', 'the metadata address in hex parts'],
    ['https://[::ffff:a9fe:a9fe]/hook', 'the metadata address as IPv4-mapped IPv6, hex form'],
    ['https://[0:0:0:0:0:ffff:7f00:1]/hook', 'loopback as a full IPv4-mapped IPv6'],
    ['https://[fd00::1]/hook', 'unique-local IPv6 (fd00::/8)'],
    ['https://[fe80::1]/hook', 'link-local IPv6'],
    ['https://8.8.8.8@127.0.0.1/hook', 'a public address as userinfo before a loopback host'],
    ['https://localhost./hook', 'a trailing dot on localhost'],
    ['https://LOCALHOST/hook', 'localhost in capitals'],
  ])('%s (%s) is refused', async (url) => {
    await expect(checkTarget(url, { allowPrivateAddresses: false })).rejects.toBeInstanceOf(AddressRefusedError);
  });
});
