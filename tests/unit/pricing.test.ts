/** What a request of a key costs and which limits count it (docs/guides/credits.md, docs/guides/plans.md). */
import { planOf, ruleOf } from '../../src/plans/plan.js';
import { Pricing } from '../../src/plans/pricing.js';
import fc from 'fast-check';
import { isUnderPrefix, matches, normalisedMatch } from '../../src/plans/request-match.js';

const request = (routeId: string | null, method: string, path: string) => ({ routeId, method, path });

describe('a request match', () => {
  it('holds when every condition given holds', () => {
    const match = { routeIds: ['search'], methods: ['POST' as const], pathPrefix: '/v1/search' };
    expect(matches(match, request('search', 'POST', '/v1/search/items'))).toBe(true);
    expect(matches(match, request('search', 'GET', '/v1/search/items'))).toBe(false);
    expect(matches(match, request('lookup', 'POST', '/v1/search/items'))).toBe(false);
    expect(matches(match, request('search', 'POST', '/v1/searching'))).toBe(false);
    // The catch-all is no route of a list.
    expect(matches({ routeIds: ['search'] }, request(null, 'GET', '/'))).toBe(false);
  });

  it('takes whole path segments', () => {
    expect(['/v1', '/v1/', '/v1/x'].map((p) => isUnderPrefix(p, '/v1'))).toEqual([true, true, true]);
    expect(['/v10', '/v', '/'].map((p) => isUnderPrefix(p, '/v1'))).toEqual([false, false, false]);
    expect(isUnderPrefix('/anything', '/')).toBe(true);
  });

  it('with caseInsensitive, takes the prefix in any ASCII case, in whole segments still', () => {
    const match = { pathPrefix: '/v2/Search', caseInsensitive: true };
    for (const path of ['/V2/SEARCH/q', '/v2/search', '/v2/sEaRcH/'])
      expect(matches(match, request(null, 'GET', path))).toBe(true);
    for (const path of ['/V2/SEARCHES', '/v2', '/v2/\u212aey'])
      expect(matches(match, request(null, 'GET', path))).toBe(false);
    expect(matches({ pathPrefix: '/v2/search' }, request(null, 'GET', '/V2/SEARCH/q'))).toBe(false);
  });

  it('with caseInsensitive, agrees with comparing both in lower case, for any path', () => {
    const text = fc.string({ unit: fc.constantFrom(...'aAbB/%2fF\u212a\u00e9') });
    fc.assert(
      fc.property(text, text, (rest, prefix) => {
        const path = '/' + rest;
        const lower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
        const p = '/' + prefix.replace(/\/+$/, '');
        expect(isUnderPrefix(path, p, true)).toBe(isUnderPrefix(lower(path), lower(p)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('is read with its prefix in normal form', () => {
    expect(normalisedMatch({ pathPrefix: '/%76%32/a%2fb', methods: ['GET' as const] })).toEqual({
      pathPrefix: '/v2/a%2Fb',
      methods: ['GET'],
    });
    const plain = { routeIds: ['search'] };
    expect(normalisedMatch(plain)).toBe(plain);
  });
});

describe('Pricing', () => {
  const keyPlan = planOf(
    [
      ruleOf({ limit: 10, period: 'minute', name: 'searches', match: { routeIds: ['search'] } }),
      ruleOf({ limit: 100, period: 'minute' }),
    ],
    [{ match: { routeIds: ['search'] }, cost: 5 }],
  );
  const consumerPlan = planOf(
    [ruleOf({ limit: 1_000, period: 'day', name: 'writes', match: { methods: ['POST'] } })],
    [
      { match: { routeIds: ['search'] }, cost: 7 },
      { match: { methods: ['POST'] }, cost: 3 },
    ],
  );

  it('is none for plans that do not depend on the request', () => {
    const flat = planOf([ruleOf({ limit: 10, period: 'minute' })]);
    expect(
      Pricing.of(
        { id: 'k', plan: flat, balance: undefined },
        { id: 'c', plan: undefined, balance: undefined },
      ),
    ).toBeUndefined();
    expect(Pricing.of({ id: 'k', plan: undefined, balance: undefined }, undefined)).toBeUndefined();
  });

  it("selects the limits a request matches, the key's before its consumer's, the same list each time", () => {
    const pricing = Pricing.of(
      { id: 'k', plan: keyPlan, balance: undefined },
      { id: 'c', plan: consumerPlan, balance: undefined },
    )!;
    const search = pricing.subjectsFor(request('search', 'GET', '/s'))!;
    expect(search.map((s) => [s.scope, s.plan.limits.map((l) => l.name)])).toEqual([
      ['key', ['searches', 'minute']],
      ['consumer', []],
    ]);
    expect(pricing.subjectsFor(request('search', 'GET', '/t'))).toBe(search);
    const post = pricing.subjectsFor(request('lookup', 'POST', '/l'))!;
    expect(post.map((s) => s.plan.limits.map((l) => l.name))).toEqual([['minute'], ['writes']]);
  });

  it("costs the first match of the key's plan, else of its consumer's, else 1", () => {
    const pricing = Pricing.of(
      { id: 'k', plan: keyPlan, balance: undefined },
      { id: 'c', plan: consumerPlan, balance: undefined },
    )!;
    expect(pricing.costRuleOf(request('search', 'POST', '/s'))?.cost ?? 1).toBe(5);
    expect(pricing.costRuleOf(request('lookup', 'POST', '/l'))?.cost ?? 1).toBe(3);
    expect(pricing.costRuleOf(request('lookup', 'GET', '/l'))?.cost ?? 1).toBe(1);
  });

  it('limits nothing when a request matches no limit of either plan', () => {
    const onlyMatched = planOf([ruleOf({ limit: 5, period: 'hour', match: { pathPrefix: '/paid' } })]);
    const pricing = Pricing.of({ id: 'k', plan: onlyMatched, balance: undefined }, undefined)!;
    expect(pricing.subjectsFor(request(null, 'GET', '/free'))).toBeUndefined();
    expect(pricing.subjectsFor(request(null, 'GET', '/paid/x'))?.[0]?.plan.limits).toHaveLength(1);
  });
});
