/** What a request of a key costs and which limits count it (contract sections 14 and 15). */
import { planOf, ruleOf } from '../../src/plans/plan.js';
import { Pricing } from '../../src/plans/pricing.js';
import { isUnderPrefix, matches } from '../../src/plans/request-match.js';

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
    expect(pricing.costOf(request('search', 'POST', '/s'))).toBe(5);
    expect(pricing.costOf(request('lookup', 'POST', '/l'))).toBe(3);
    expect(pricing.costOf(request('lookup', 'GET', '/l'))).toBe(1);
  });

  it('limits nothing when a request matches no limit of either plan', () => {
    const onlyMatched = planOf([ruleOf({ limit: 5, period: 'hour', match: { pathPrefix: '/paid' } })]);
    const pricing = Pricing.of({ id: 'k', plan: onlyMatched, balance: undefined }, undefined)!;
    expect(pricing.subjectsFor(request(null, 'GET', '/free'))).toBeUndefined();
    expect(pricing.subjectsFor(request(null, 'GET', '/paid/x'))?.[0]?.plan.limits).toHaveLength(1);
  });
});
