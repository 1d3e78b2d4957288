/**
 * Whom a forward auth call is about (src/extauth/forward-auth.ts): the entry of X-Forwarded-For the
 * gateway added, counted from its end (EXTAUTH_TRUSTED_HOPS), never one the client wrote before it.
 */
import { clientOf } from '../../src/extauth/forward-auth.js';

describe('the client of a forward auth call', () => {
  it('is the last X-Forwarded-For entry, or the one EXTAUTH_TRUSTED_HOPS names from the end, canonical', () => {
    const chain = '203.0.113.9, 198.51.100.7,2001:DB8:0:0:0:0:0:9';
    expect(clientOf(chain, 1)).toBe('2001:db8::9');
    expect(clientOf(chain, 2)).toBe('198.51.100.7');
    expect(clientOf(['203.0.113.9', '198.51.100.7'], 1)).toBe('198.51.100.7');
  });

  it('is unknown without the header, or when the gateway sent fewer entries than the hops trusted', () => {
    expect(clientOf(undefined, 1)).toBeUndefined();
    expect(clientOf('198.51.100.7', 2)).toBeUndefined();
    expect(clientOf('198.51.100.7, ', 1)).toBeUndefined();
  });
});
