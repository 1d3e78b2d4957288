import { isIPv6 } from 'node:net';

/** An IPv4-mapped IPv6 address as the URL standard writes it: `::ffff:` and two hex groups. */
const IPV4_MAPPED = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/**
 * The one spelling of a client address, so that whatever is counted per address (wrong-key throttles,
 * per-visitor limits) counts each address once however it is written: IPv6 in the form of RFC 5952
 * (lower case, no leading zeros, the longest run of zero groups compressed), an IPv4-mapped IPv6 address
 * as the IPv4 address it maps. `2001:DB8::9` and `2001:db8:0:0:0:0:0:9` are both `2001:db8::9`;
 * `::FFFF:203.0.113.9` and `::ffff:cb00:7109` are both `203.0.113.9`. A zone (`%eth0`) is kept as
 * written; anything that is not an IPv6 address (IPv4, a name, garbage) is returned unchanged.
 */
export function canonicalAddress(address: string): string {
  // Every IPv6 address has a colon: an IPv4 address, the common case, skips isIPv6's long expression.
  if (!address.includes(':') || !isIPv6(address)) return address;
  const zoneAt = address.indexOf('%');
  const [ip, zone] = zoneAt < 0 ? [address, ''] : [address.slice(0, zoneAt), address.slice(zoneAt)];
  // The URL standard serialises an IPv6 host exactly as RFC 5952 section 4 recommends.
  const canonical = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const mapped = IPV4_MAPPED.exec(canonical);
  if (mapped === null) return canonical + zone;
  const [high, low] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}
