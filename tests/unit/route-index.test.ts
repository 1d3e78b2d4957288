import fc from 'fast-check';
import { buildRouteIndex } from '../../src/routes/route-index.js';
import {
  HTTP_METHODS,
  overlaps,
  requestHost,
  type HttpMethod,
  type RouteMatch,
} from '../../src/plans/route.js';

const route = (
  id: string,
  pathPrefix: string,
  host: string | null = null,
  methods: HttpMethod[] | null = null,
  caseInsensitive = false,
) => ({ match: { host, pathPrefix, methods, caseInsensitive }, value: id });

describe('route matching', () => {
  it('matches whole segments only: /v1 takes /v1, /v1/ and /v1/x, never /v10', () => {
    const index = buildRouteIndex([route('v1', '/v1')], 'catch-all');
    expect(index.match(undefined, 'GET', '/v1')).toBe('v1');
    expect(index.match(undefined, 'GET', '/v1/')).toBe('v1');
    expect(index.match(undefined, 'GET', '/v1/items/7')).toBe('v1');
    expect(index.match(undefined, 'GET', '/v10')).toBe('catch-all');
    expect(index.match(undefined, 'GET', '/v10/items')).toBe('catch-all');
    expect(index.match(undefined, 'GET', '/')).toBe('catch-all');
    expect(index.match(undefined, 'GET', '/x/v1')).toBe('catch-all');
  });

  it('takes the longest prefix first, whatever order the routes came in', () => {
    const index = buildRouteIndex(
      [
        route('root', '/'),
        route('v1', '/v1'),
        route('search', '/v1/search'),
        route('deep', '/v1/search/x/y'),
      ],
      undefined,
    );
    expect(index.match(undefined, 'GET', '/v1/search/x')).toBe('search');
    expect(index.match(undefined, 'GET', '/v1/search/x/y/z')).toBe('deep');
    expect(index.match(undefined, 'GET', '/v1/lookup')).toBe('v1');
    expect(index.match(undefined, 'GET', '/v2')).toBe('root');
    expect(index.match(undefined, 'GET', '/')).toBe('root');
  });

  it('answers the fallback, or nothing without one, when no route matches', () => {
    expect(buildRouteIndex([route('v1', '/v1')], 'catch-all').match(undefined, 'GET', '/v2')).toBe(
      'catch-all',
    );
    expect(buildRouteIndex([route('v1', '/v1')], undefined).match(undefined, 'GET', '/v2')).toBeUndefined();
    expect(buildRouteIndex<string>([], undefined).match('a.example.com', 'GET', '/')).toBeUndefined();
  });

  it('matches a wildcard host on any host under it, not on the bare domain', () => {
    const index = buildRouteIndex([route('wild', '/', '*.example.com')], undefined);
    expect(index.match('api.example.com', 'GET', '/x')).toBe('wild');
    expect(index.match('a.b.example.com', 'GET', '/x')).toBe('wild');
    expect(index.match('API.Example.COM:8443', 'GET', '/x')).toBe('wild');
    expect(index.match('example.com', 'GET', '/x')).toBeUndefined();
    expect(index.match('badexample.com', 'GET', '/x')).toBeUndefined();
    expect(index.match(undefined, 'GET', '/x')).toBeUndefined();
  });

  it('prefers, for the same prefix, the exact host, then the longest wildcard, then a route for every host', () => {
    const index = buildRouteIndex(
      [
        route('any', '/v1'),
        route('wide', '/v1', '*.example.com'),
        route('narrow', '/v1', '*.eu.example.com'),
        route('exact', '/v1', 'api.eu.example.com'),
      ],
      undefined,
    );
    expect(index.match('api.eu.example.com', 'GET', '/v1')).toBe('exact');
    expect(index.match('web.eu.example.com', 'GET', '/v1')).toBe('narrow');
    expect(index.match('web.example.com', 'GET', '/v1')).toBe('wide');
    expect(index.match('other.org', 'GET', '/v1')).toBe('any');
  });

  it('puts the longest prefix before the most specific host', () => {
    const index = buildRouteIndex(
      [route('exact-short', '/v1', 'api.example.com'), route('any-long', '/v1/search')],
      undefined,
    );
    expect(index.match('api.example.com', 'GET', '/v1/search')).toBe('any-long');
    expect(index.match('api.example.com', 'GET', '/v1/lookup')).toBe('exact-short');
  });

  it('narrows a route to its methods; another route (or a shorter prefix) takes the rest', () => {
    const index = buildRouteIndex(
      [
        route('reads', '/v1', null, ['GET', 'HEAD']),
        route('writes', '/v1', null, ['POST']),
        route('root', '/'),
      ],
      'catch-all',
    );
    expect(index.match(undefined, 'GET', '/v1/x')).toBe('reads');
    expect(index.match(undefined, 'HEAD', '/v1/x')).toBe('reads');
    expect(index.match(undefined, 'POST', '/v1/x')).toBe('writes');
    expect(index.match(undefined, 'DELETE', '/v1/x')).toBe('root');
    expect(
      buildRouteIndex([route('reads', '/v1', null, ['GET'])], 'catch-all').match(undefined, 'PUT', '/v1'),
    ).toBe('catch-all');
  });

  it('compares a caseInsensitive route without regard to ASCII case, in whole segments still', () => {
    const index = buildRouteIndex(
      [route('search', '/v2/Search', null, null, true), route('exact', '/v3')],
      'catch-all',
    );
    expect(index.match(undefined, 'GET', '/V2/SEARCH/q')).toBe('search');
    expect(index.match(undefined, 'GET', '/v2/search')).toBe('search');
    expect(index.match(undefined, 'GET', '/v2/searchx')).toBe('catch-all');
    expect(index.match(undefined, 'GET', '/V3')).toBe('catch-all');
    // Only A-Z fold: the Kelvin sign lowers to k in Unicode, but no backend reads it as one.
    expect(
      buildRouteIndex([route('k', '/k', null, null, true)], 'none').match(undefined, 'GET', '/\u212a'),
    ).toBe('none');
  });

  it('reads the request host without port, trailing dot or case, IPv6 literals whole', () => {
    expect(requestHost('API.example.com:8080')).toBe('api.example.com');
    expect(requestHost('api.example.com.')).toBe('api.example.com');
    expect(requestHost('[::1]:8080')).toBe('[::1]');
    expect(requestHost('')).toBeUndefined();
    expect(requestHost(undefined)).toBeUndefined();
  });
});

describe('overlapping matches', () => {
  const m = (
    host: string | null,
    pathPrefix: string,
    methods: HttpMethod[] | null,
    caseInsensitive = false,
  ): RouteMatch => ({ host, pathPrefix, methods, caseInsensitive });
  it('overlap on the same host and prefix with a method in common, or either taking every method', () => {
    expect(overlaps(m(null, '/v1', null), m(null, '/v1', ['GET']))).toBe(true);
    expect(overlaps(m('a.com', '/v1', ['GET', 'POST']), m('a.com', '/v1', ['POST']))).toBe(true);
    expect(overlaps(m('a.com', '/v1', ['GET']), m('a.com', '/v1', ['POST']))).toBe(false);
    expect(overlaps(m('a.com', '/v1', null), m(null, '/v1', null))).toBe(false);
    expect(overlaps(m(null, '/v1', null), m(null, '/v1/x', null))).toBe(false);
  });
  it('overlap on prefixes differing in case only when either route is caseInsensitive', () => {
    expect(overlaps(m(null, '/V1', null), m(null, '/v1', null))).toBe(false);
    expect(overlaps(m(null, '/V1', null, true), m(null, '/v1', null))).toBe(true);
    expect(overlaps(m(null, '/V1', null), m(null, '/v1', ['GET'], true))).toBe(true);
    expect(overlaps(m(null, '/V1', ['POST']), m(null, '/v1', ['GET'], true))).toBe(false);
  });
});

// ---- the index against the rule itself: a scan of every route, for any table and request ----

const label = fc.constantFrom('a', 'eu', 'com');
const hostName = fc.array(label, { minLength: 1, maxLength: 3 }).map((labels) => labels.join('.'));
const segment = fc.constantFrom('v1', 'v10', 'x', 'search', 'V1', 'Search');
const prefix = fc.array(segment, { maxLength: 3 }).map((segments) => '/' + segments.join('/'));
const methods = fc.option(fc.uniqueArray(fc.constantFrom(...HTTP_METHODS), { minLength: 1, maxLength: 3 }), {
  nil: null,
});
const routeHost = fc.option(
  fc.oneof(
    hostName,
    hostName.map((h) => '*.' + h),
  ),
  { nil: null },
);
const routeMatch = fc.record({ host: routeHost, pathPrefix: prefix, methods, caseInsensitive: fc.boolean() });
const requestPath = fc
  .tuple(fc.array(segment, { maxLength: 4 }), fc.boolean())
  .map(([segments, slash]) => '/' + segments.join('/') + (slash && segments.length > 0 ? '/' : ''));

/** What docs/guides/routes.md says, as a scan: the longest prefix, then the most specific host, then the oldest. */
function byTheRule(
  table: readonly RouteMatch[],
  host: string | undefined,
  method: HttpMethod,
  path: string,
): number | undefined {
  const h = requestHost(host);
  const under = (p: string, prefix: string) => prefix === '/' || p === prefix || p.startsWith(prefix + '/');
  const takes = (m: RouteMatch) =>
    (m.host === null ||
      (m.host.startsWith('*.') ? h !== undefined && h.endsWith(m.host.slice(1)) : m.host === h)) &&
    (m.caseInsensitive ? under(path.toLowerCase(), m.pathPrefix.toLowerCase()) : under(path, m.pathPrefix)) &&
    (m.methods === null || m.methods.includes(method));
  const depth = (m: RouteMatch) => (m.pathPrefix === '/' ? 0 : m.pathPrefix.split('/').length - 1);
  const specificity = (m: RouteMatch) =>
    m.host === null ? -1 : m.host.startsWith('*.') ? m.host.length : Infinity;
  const candidates = table.map((m, i) => ({ m, i })).filter(({ m }) => takes(m));
  candidates.sort((x, y) => depth(y.m) - depth(x.m) || specificity(y.m) - specificity(x.m) || x.i - y.i);
  return candidates[0]?.i;
}

describe('the index, for any table and request', () => {
  it('picks the route a scan of every route by the rule picks', () => {
    fc.assert(
      fc.property(
        fc.array(routeMatch, { maxLength: 12 }),
        fc.option(fc.tuple(fc.array(label, { maxLength: 2 }), hostName), { nil: undefined }),
        fc.constantFrom(...HTTP_METHODS),
        requestPath,
        (generated, hostParts, method, path) => {
          // Often a host the table names, or one under it: the cases where hosts compete.
          const named = generated.find((m) => m.host !== null)?.host?.replace('*.', '');
          const host = hostParts && [...hostParts[0], named ?? hostParts[1]].join('.');
          // The management API refuses a route that overlaps an existing one: tables never hold two.
          const table = generated.filter(
            (m, i) => !generated.slice(0, i).some((earlier) => overlaps(earlier, m)),
          );
          const index = buildRouteIndex(
            table.map((match, i) => ({ match, value: i })),
            undefined,
          );
          expect(index.match(host, method, path)).toBe(byTheRule(table, host, method, path));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('never lets /v1 take /v1x: a prefix matches at a segment boundary only', () => {
    fc.assert(
      fc.property(prefix, fc.stringMatching(/^[a-z0-9]{1,4}$/), (p, tail) => {
        if (p === '/') return;
        const index = buildRouteIndex([route('p', p)], 'none');
        expect(index.match(undefined, 'GET', p + tail)).toBe('none');
        expect(index.match(undefined, 'GET', p + '/' + tail)).toBe('p');
      }),
    );
  });
});
