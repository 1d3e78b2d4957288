import { describe, expect, it } from '@jest/globals';
import { parseToken } from '../../src/keys/token.js';
import { VerifiedTokens } from '../../src/keys/verified-tokens.js';
import { mintToken } from '../../src/keys/mint-token.js';

const secret = 'tg_' + 'a'.repeat(43);
const tokenFor = (kid: string) =>
  mintToken(secret, { consumerApiKeyId: kid, expiresInSeconds: 600, nowMs: Date.UTC(2026, 0, 5) });

describe('VerifiedTokens', () => {
  it('remembers a checked token by its exact text, with the signing key it was checked with', () => {
    const tokens = new VerifiedTokens();
    const token = tokenFor('key_1');
    const signingKey = Buffer.from('signing');
    tokens.add(token, { claims: parseToken(token)!, signingKey });
    expect(tokens.get(token)?.signingKey).toBe(signingKey);
    expect(tokens.get(token)?.claims.kid).toBe('key_1');
    expect(tokens.get(token + 'x')).toBeUndefined();
  });

  it('holds at most its bound, dropping the oldest first', () => {
    const tokens = new VerifiedTokens(2);
    const [a, b, c] = ['key_a', 'key_b', 'key_c'].map(tokenFor) as [string, string, string];
    for (const t of [a, b, c]) tokens.add(t, { claims: parseToken(t)!, signingKey: Buffer.from(t) });
    expect([a, b, c].map((t) => tokens.get(t) !== undefined)).toEqual([false, true, true]);
  });
});
