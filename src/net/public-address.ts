import { isIP } from 'node:net';
import { addressMatcher } from './address-blocks.js';
import { canonicalAddress } from './canonical-address.js';

/**
 * The blocks no fetch made for a user may reach (docs/decisions/0151-portal-reference-reach.md):
 * unspecified, loopback, private, shared (CGNAT), link-local, IETF and benchmarking, multicast and
 * reserved IPv4; unspecified, loopback and IPv4-compatible, NAT64, discard, Teredo, 6to4,
 * unique-local, link-local, site-local and multicast IPv6. An IPv4-mapped IPv6 address is checked as
 * the IPv4 address it maps (canonical-address.ts). The documentation ranges route nowhere and are left
 * out.
 */
const NOT_PUBLIC = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/96',
  '64:ff9b::/96',
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/32',
  '2002::/16',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
];
const notPublic = addressMatcher(NOT_PUBLIC);

/** Whether `address` (an IP address in any form `canonicalAddress` reads) is a public one; a name is not. */
export function isPublicAddress(address: string): boolean {
  const canonical = canonicalAddress(address);
  return isIP(canonical) !== 0 && !canonical.includes('%') && !notPublic(canonical);
}

/**
 * The IP address a URL's host names, or undefined for a host name. The URL standard has already read
 * every spelling of an IPv4 address (`0x7f000001`, `2130706433`, `127.1`, `0177.0.0.1`) as dotted
 * decimal for http and https, and written IPv6 in brackets.
 */
export function hostAddress(url: URL): string | undefined {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? undefined : host;
}
