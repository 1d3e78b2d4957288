import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { canonicalAddress } from './canonical-address.js';

/** One address or CIDR block: `203.0.113.7`, `203.0.113.0/24`, `2001:db8::/32`. */
export interface AddressBlock {
  readonly address: string;
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
}

/**
 * The block `text` names, or undefined when it names none. An IPv4-mapped IPv6 address without a
 * prefix is the IPv4 address it maps (src/net/canonical-address.ts), as client addresses are.
 */
export function parseAddressBlock(text: string): AddressBlock | undefined {
  const slash = text.indexOf('/');
  const address = canonicalAddress(slash < 0 ? text : text.slice(0, slash));
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) && !address.includes('%') ? 'ipv6' : undefined;
  if (family === undefined) return undefined;
  const bits = family === 'ipv4' ? 32 : 128;
  if (slash < 0) return { address, prefix: bits, family };
  const prefix = text.slice(slash + 1);
  // Decimal without leading zeros (`/08` is no prefix: some parsers read it as octal).
  if (!/^(?:0|[1-9][0-9]{0,2})$/.test(prefix) || Number(prefix) > bits) return undefined;
  return { address, prefix: Number(prefix), family };
}

/** Whether a client address (in canonical form) falls in one of the blocks it was built from. */
export type AddressMatcher = (address: string) => boolean;

/** The matcher of `blocks` (each valid for parseAddressBlock); built once, off the request path. */
export function addressMatcher(blocks: readonly string[]): AddressMatcher {
  const list = new BlockList();
  for (const text of blocks) {
    const block = parseAddressBlock(text);
    if (block !== undefined) list.addSubnet(block.address, block.prefix, block.family);
  }
  return (address) => {
    const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
    return family !== undefined && list.check(address, family);
  };
}
