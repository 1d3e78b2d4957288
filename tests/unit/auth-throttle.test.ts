/** The in-process failed-credential throttle (single node, and each replica's fallback while Redis is down). */
import { describe, expect, it } from '@jest/globals';
import { AuthThrottle, type Attempt } from '../../src/proxy/auth-throttle.js';

const T0 = Date.UTC(2026, 0, 5, 10, 0, 0, 250);
const allowed = (attempts: readonly Attempt[]) => attempts.filter((a) => a.allowed);

describe('AuthThrottle', () => {
  it('lets no more checks begin at once than the budget holds, however many arrive before the first is settled', () => {
    const throttle = new AuthThrottle({ limit: 20, period: 'minute' });
    const attempts = Array.from({ length: 60 }, () => throttle.attempt('203.0.113.1', T0));
    expect(allowed(attempts)).toHaveLength(20);
    expect(attempts.find((a) => !a.allowed)).toEqual({
      allowed: false,
      retryAtMs: Date.UTC(2026, 0, 5, 10, 1, 0),
    });
    for (const a of allowed(attempts)) a.settle(true);
    expect(throttle.blockedUntil('203.0.113.1', T0)).toBe(Date.UTC(2026, 0, 5, 10, 1, 0));
    expect(throttle.attempt('203.0.113.1', T0).allowed).toBe(false);
  });

  it('gives a place back for a credential that was right, or never checked', () => {
    const throttle = new AuthThrottle({ limit: 2, period: 'minute' });
    const [first, second] = [throttle.attempt('203.0.113.2', T0), throttle.attempt('203.0.113.2', T0)];
    expect(throttle.attempt('203.0.113.2', T0).allowed).toBe(false);
    if (!first.allowed || !second.allowed) throw new Error('both should be allowed');
    first.settle(false);
    second.settle(true);
    second.settle(true); // settling twice counts once
    const third = throttle.attempt('203.0.113.2', T0);
    expect(third.allowed).toBe(true);
    if (third.allowed) third.settle(true);
    expect(throttle.blockedUntil('203.0.113.2', T0)).toBeDefined();
  });

  it('counts each address and each window on its own, and forgets the oldest address first', () => {
    const throttle = new AuthThrottle({ limit: 1, period: 'minute' }, 2);
    const fail = (address: string, at: number) => {
      const a = throttle.attempt(address, at);
      if (a.allowed) a.settle(true);
      return a.allowed;
    };
    expect(fail('a', T0)).toBe(true);
    expect(fail('a', T0)).toBe(false);
    expect(fail('b', T0)).toBe(true);
    expect(fail('a', T0 + 60_000)).toBe(true);
    expect(fail('c', T0)).toBe(true);
    // Three addresses, room for two: 'a' (the oldest) was forgotten and may try again.
    expect(throttle.blockedUntil('a', T0 + 60_000)).toBeUndefined();
    expect(throttle.blockedUntil('c', T0)).toBeDefined();
  });

  it('counts one address however it is spelled', () => {
    const throttle = new AuthThrottle({ limit: 3, period: 'minute' });
    const fail = (address: string) => {
      const a = throttle.attempt(address, T0);
      if (a.allowed) a.settle(true);
    };
    for (const spellings of [
      ['2001:DB8::9', '2001:db8:0:0:0:0:0:9', '2001:db8::9'],
      ['::FFFF:203.0.113.9', '::ffff:cb00:7109', '203.0.113.9'],
    ]) {
      fail(spellings[0]!);
      fail(spellings[1]!);
      expect(throttle.blockedUntil(spellings[2]!, T0)).toBeUndefined();
      fail(spellings[2]!);
      for (const spelling of spellings)
        expect(throttle.blockedUntil(spelling, T0)).toBe(Date.UTC(2026, 0, 5, 10, 1, 0));
    }
  });
});
