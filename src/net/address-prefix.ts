import { isIPv6 } from 'node:net';

/**
 * Where one visitor's requests come from, as counted per client address: an IPv4 address itself; an
 * IPv6 address by its /64, the prefix one subscriber gets (RFC 6177), so a visitor cannot take a new
 * count per request by walking the addresses of its own network. Takes a canonical address
 * (canonical-address.ts) and gives `<first four groups>::/64`.
 */
export function visitorAddress(canonical: string): string {
  if (!isIPv6(canonical)) return canonical;
  const zoneAt = canonical.indexOf('%');
  const ip = zoneAt < 0 ? canonical : canonical.slice(0, zoneAt);
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const groups = head === '' ? [] : head.split(':');
  if (tail !== undefined) {
    const after = tail === '' ? [] : tail.split(':');
    while (groups.length + after.length < 8) groups.push('0');
    groups.push(...after);
  }
  return `${groups.slice(0, 4).join(':')}::/64`;
}
