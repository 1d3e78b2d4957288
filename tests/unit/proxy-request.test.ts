import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ruleOf } from '../../src/plans/plan.js';
import { credentialOf } from '../../src/proxy/credential.js';
import {
  backendHeaders,
  forwardedFacts,
  requestIdOf,
  responseHeaders,
} from '../../src/proxy/forwarding-headers.js';
import { isoSeconds, rateLimitHeader, rateLimitPolicyHeader } from '../../src/proxy/rate-limit-headers.js';
import { hasDotSegment, originForm, upstreamPrefix } from '../../src/proxy/request-target.js';
import { isManagementPath } from '../../src/server.js';
import { keyOnly, plan } from '../helpers/plans.js';
import type { Subject } from '../../src/plans/subject.js';

describe('isManagementPath', () => {
  it.each([
    ['/consumer-api-key', ''],
    ['/consumer-api-key/create', ''],
    ['/consumer-api-key/key_abc', ''],
    ['/consumer-api-key/%2e%2e', ''],
    ['/rate-limit/create', ''],
    ['/rate-limit', ''],
    ['/rate-limit/gold', ''],
    ['/consumer-api-key/key_abc/roll', ''],
    ['/api-keys/apply-rate-limit', ''],
    ['/api-keys/remove-rate-limit', ''],
    ['/admin/consumer-api-key', '/admin'],
    ['/admin/consumer-api-key/x', '/admin'],
    ['/tollgate', ''],
    ['/tollgate/', ''],
    ['/tollgate/console/index.html', ''],
    ['/tollgate/anything/at/all', ''],
    ['/admin/tollgate/usage', '/admin'],
  ])('%s (prefix "%s") is management', (path, prefix) => expect(isManagementPath(path, prefix)).toBe(true));

  it.each([
    ['/consumer-api-key/', ''],
    ['/consumer-api-key/a/b', ''],
    ['/consumer-api-keys', ''],
    ['/Consumer-Api-Key', ''],
    ['//consumer-api-key', ''],
    ['/rate-limit/create/', ''],
    ['/rate-limit/', ''],
    ['/rate-limit/gold/keys', ''],
    ['/consumer-api-key/key_abc/roll/x', ''],
    ['/api-keys/apply-rate-limit/x', ''],
    ['/consumer-api-key', '/admin'],
    ['/adminx/consumer-api-key', '/admin'],
    ['/v1/consumer-api-key', ''],
    ['/x/..%2fconsumer-api-key', ''],
    ['/tollgatex', ''],
    ['/v1/tollgate/usage', ''],
    ['/tollgate/usage', '/admin'],
    ['', ''],
  ])('%s (prefix "%s") is proxied', (path, prefix) => expect(isManagementPath(path, prefix)).toBe(false));
});

describe('request targets', () => {
  it('splits origin-form targets into path and query without decoding', () => {
    expect(originForm('/a%20b/c?x=%2F&y', 'h')).toEqual({ path: '/a%20b/c', search: '?x=%2F&y' });
    expect(originForm('/', undefined)).toEqual({ path: '/', search: '' });
  });

  it('accepts absolute-form targets only for the request’s own host', () => {
    expect(originForm('http://Tollgate.test:8080/a?b', 'tollgate.test:8080')).toEqual({
      path: '/a',
      search: '?b',
    });
    expect(originForm('https://tollgate.test', 'tollgate.test')).toEqual({ path: '/', search: '' });
    expect(originForm('http://tollgate.test?q=1', 'tollgate.test')).toEqual({ path: '/', search: '?q=1' });
    expect(originForm('http://evil.test/a', 'tollgate.test')).toBeUndefined();
    expect(originForm('http://user@tollgate.test/a', 'tollgate.test')).toBeUndefined();
    expect(originForm('http://tollgate.test/a', undefined)).toBeUndefined();
    expect(originForm('*', 'tollgate.test')).toBeUndefined();
    expect(originForm('tollgate.test:443', 'tollgate.test')).toBeUndefined();
  });

  const dotForms = ['..', '.', '%2e%2e', '%2E%2E', '.%2e', '%2e.', '%2e'];
  const separators = ['/', '\\', '%2f', '%2F', '%5c', '%5C'];
  const safeSegment = fc
    .stringMatching(/^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,8}$/)
    .filter((s) => s !== '.' && s !== '..');

  it('refuses any path with a dot segment, however it is spelt and wherever it sits', () => {
    fc.assert(
      fc.property(
        fc.array(safeSegment, { maxLength: 4 }),
        fc.array(safeSegment, { maxLength: 4 }),
        fc.constantFrom(...dotForms),
        fc.constantFrom(...separators),
        fc.boolean(),
        (before, after, dots, sep, trailing) => {
          const path = '/' + [...before, dots, ...after].join(sep) + (trailing ? sep : '');
          return hasDotSegment(path);
        },
      ),
    );
  });

  it('accepts paths of ordinary segments, dots inside names included', () => {
    fc.assert(
      fc.property(
        fc.array(safeSegment, { maxLength: 6 }),
        (segments) => !hasDotSegment('/' + segments.join('/')),
      ),
    );
    for (const path of ['/a/b.json', '/a/..b', '/a/b..', '/.well-known/x', '/a/%2e%2ex', '/v1.2/x'])
      expect(hasDotSegment(path)).toBe(false);
    for (const path of ['/a/..;/b', '/a/%252e%252e/b', '/a/%252F']) expect(hasDotSegment(path)).toBe(true);
  });

  it('takes the path of UPSTREAM_URL without its trailing slash as the prefix', () => {
    expect(upstreamPrefix(new URL('http://b:3000'))).toBe('');
    expect(upstreamPrefix(new URL('http://b:3000/'))).toBe('');
    expect(upstreamPrefix(new URL('http://b:3000/api/v1/'))).toBe('/api/v1');
  });
});

describe('credentials', () => {
  const secret = 'tg_' + 'a'.repeat(43);
  it('reads a bearer token (any case of the scheme), else x-api-key', () => {
    expect(credentialOf({ authorization: `Bearer ${secret}` })).toBe(secret);
    expect(credentialOf({ authorization: `bearer  ${secret} ` })).toBe(secret);
    expect(credentialOf({ 'x-api-key': secret })).toBe(secret);
    expect(credentialOf({ authorization: `Bearer ${secret}`, 'x-api-key': 'other' })).toBe(secret);
    expect(credentialOf({ authorization: 'Basic Zm9v', 'x-api-key': secret })).toBe(secret);
  });

  it('tells a missing credential from an unusable one', () => {
    expect(credentialOf({})).toBeUndefined();
    expect(credentialOf({ authorization: 'Basic Zm9v' })).toBe('');
    expect(credentialOf({ authorization: 'Bearer' })).toBe('');
  });
});

describe('forwarded facts and headers', () => {
  const req = (peer: string, headers: Record<string, string>) =>
    ({ socket: { remoteAddress: peer }, headers }) as unknown as IncomingMessage;

  it('ignores X-Forwarded-* from an untrusted peer', () => {
    expect(
      forwardedFacts(
        req('::ffff:10.0.0.9', { host: 'h', 'x-forwarded-for': '6.6.6.6', 'x-forwarded-proto': 'https' }),
        { hops: 0 },
      ),
    ).toEqual({
      client: '10.0.0.9',
      forwardedFor: '10.0.0.9',
      forwardedProto: 'http',
      forwardedHost: 'h',
    });
  });

  it('keeps as many X-Forwarded-For entries as there are trusted hops', () => {
    const r = req('10.0.0.1', {
      host: 'h',
      'x-forwarded-for': '6.6.6.6, 1.2.3.4, 10.0.0.2',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'api.example',
    });
    expect(forwardedFacts(r, { hops: 1 })).toEqual({
      client: '10.0.0.2',
      forwardedFor: '10.0.0.2, 10.0.0.1',
      forwardedProto: 'https',
      forwardedHost: 'api.example',
    });
    expect(forwardedFacts(r, { hops: 2 })).toMatchObject({
      client: '1.2.3.4',
      forwardedFor: '1.2.3.4, 10.0.0.2, 10.0.0.1',
    });
    expect(forwardedFacts(r, { hops: 10 }).forwardedFor).toBe('6.6.6.6, 1.2.3.4, 10.0.0.2, 10.0.0.1');
  });

  it('walks X-Forwarded-For through trusted addresses only', () => {
    const r = req('10.0.0.1', { host: 'h', 'x-forwarded-for': '6.6.6.6, 1.2.3.4, 10.0.0.2' });
    expect(forwardedFacts(r, { addresses: ['10.0.0.1', '10.0.0.2'] })).toMatchObject({
      client: '1.2.3.4',
      forwardedFor: '1.2.3.4, 10.0.0.2, 10.0.0.1',
    });
    expect(forwardedFacts(r, { addresses: ['10.0.0.2'] }).forwardedFor).toBe('10.0.0.1');
  });

  it('copies end-to-end headers and replaces what Tollgate sets', () => {
    const list = backendHeaders(
      {
        connection: 'keep-alive, X-Private',
        'x-private': '1',
        'proxy-authorization': 'x',
        authorization: 'Bearer s',
        'x-api-key': 'forged',
        'set-cookie': ['a=1', 'b=2'],
        accept: 'application/json',
      },
      {
        secret: 's',
        keyId: 'key_1',
        requestId: 'r',
        forwardedFor: '1.1.1.1',
        forwardedProto: 'http',
        forwardedHost: undefined,
      },
    );
    const pairs: string[] = [];
    for (let i = 0; i < list.length; i += 2) pairs.push(`${list[i]}: ${list[i + 1]}`);
    expect(pairs).toEqual([
      'set-cookie: a=1',
      'set-cookie: b=2',
      'accept: application/json',
      'x-api-key: s',
      'x-consumer-api-key-id: key_1',
      'x-request-id: r',
      'x-forwarded-for: 1.1.1.1',
      'x-forwarded-proto: http',
    ]);
  });

  it('builds the response head from the raw backend headers, without hop-by-hop or Tollgate-owned ones', () => {
    const raw = (...pairs: string[]) => pairs.map((p) => Buffer.from(p, 'latin1'));
    const head = raw(
      'Content-Type',
      'text/plain',
      'Connection',
      'close, X-Hop',
      'X-Hop',
      '1',
      'Keep-Alive',
      'timeout=5',
      'Transfer-Encoding',
      'chunked',
      'Proxy-Authenticate',
      'Basic',
      'Set-Cookie',
      'a=1',
      'Set-Cookie',
      'b=2',
      'X-Request-Id',
      'backend-id',
      'RateLimit',
      'backend',
      'X-Latin',
      'caf\u00e9',
    );
    expect(responseHeaders(head, true)).toEqual([
      'Content-Type',
      'text/plain',
      'Set-Cookie',
      'a=1',
      'Set-Cookie',
      'b=2',
      'X-Latin',
      'caf\u00e9',
    ]);
    // Without a limit of its own, Tollgate passes the backend's RateLimit fields on.
    expect(
      responseHeaders(raw('Connection', 'keep-alive', 'RateLimit', 'backend', 'Date', 'x'), false),
    ).toEqual(['RateLimit', 'backend', 'Date', 'x']);
  });

  it('accepts a sane x-request-id and replaces anything else', () => {
    expect(requestIdOf({ 'x-request-id': 'abc-123_x.y:z' })).toBe('abc-123_x.y:z');
    expect(requestIdOf({ 'x-request-id': 'x'.repeat(129) })).toMatch(/^[0-9a-f-]{36}$/);
    expect(requestIdOf({ 'x-request-id': 'a b' })).toMatch(/^[0-9a-f-]{36}$/);
    expect(requestIdOf({})).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('RateLimit headers (draft-ietf-httpapi-ratelimit-headers structured fields)', () => {
  const now = Date.UTC(2026, 1, 10, 12, 30, 0, 500);
  it('states the quota and window of each limit, by name (the period unless named)', () => {
    expect(rateLimitPolicyHeader(keyOnly('key_1', plan({ limit: 1000, period: 'hour' })), now)).toBe(
      '"hour";q=1000;w=3600',
    );
    expect(rateLimitPolicyHeader(keyOnly('key_1', plan({ limit: 5, period: 'week' })), now)).toBe(
      '"week";q=5;w=604800',
    );
    // February 2026 has 28 days, 2026 has 365.
    expect(rateLimitPolicyHeader(keyOnly('key_1', plan({ limit: 5, period: 'month' })), now)).toBe(
      `"month";q=5;w=${28 * 86400}`,
    );
    expect(rateLimitPolicyHeader(keyOnly('key_1', plan({ limit: 5, period: 'year' })), now)).toBe(
      `"year";q=5;w=${365 * 86400}`,
    );
    expect(
      rateLimitPolicyHeader(
        keyOnly(
          'key_1',
          plan(
            { limit: 10, period: 'second', name: 'burst' },
            { limit: 10_000, period: 'month', name: 'quota', algorithm: 'sliding' },
          ),
        ),
        now,
      ),
    ).toBe(`"burst";q=10;w=1, "quota";q=10000;w=${30 * 86400}`);
  });

  it('writes the same subjects’ policy once a month, and anew as each month and year begins', () => {
    const subjects = keyOnly(
      'key_1',
      plan({ limit: 5, period: 'month' }, { limit: 9, period: 'year' }, { limit: 1, period: 'hour' }),
    );
    const policy = (days: number, year: number) =>
      `"month";q=5;w=${days * 86400}, "year";q=9;w=${year * 86400}, "hour";q=1;w=3600`;
    expect(rateLimitPolicyHeader(subjects, now)).toBe(policy(28, 365));
    const lastOfFebruary = Date.UTC(2026, 2, 1) - 1;
    expect(rateLimitPolicyHeader(subjects, lastOfFebruary)).toBe(policy(28, 365));
    expect(rateLimitPolicyHeader(subjects, lastOfFebruary + 1)).toBe(policy(31, 365));
    expect(rateLimitPolicyHeader(subjects, Date.UTC(2028, 1, 3))).toBe(policy(29, 366));
    // Back in time (a clock set back): the month it is, not the last one written.
    expect(rateLimitPolicyHeader(subjects, now)).toBe(policy(28, 365));
  });

  it('lists the key’s limits, then its consumer’s, named consumer.<name>', () => {
    const subjects: Subject[] = [
      { scope: 'key', id: 'key_1', plan: plan({ limit: 10, period: 'second', name: 'burst' }) },
      {
        scope: 'consumer',
        id: 'con_1',
        plan: plan({ limit: 600, period: 'minute' }, { limit: 100_000, period: 'month', name: 'quota' }),
      },
    ];
    expect(rateLimitPolicyHeader(subjects, now)).toBe(
      `"burst";q=10;w=1, "consumer.minute";q=600;w=60, "consumer.quota";q=100000;w=${28 * 86400}`,
    );
    // A consumer without a plan adds nothing.
    expect(rateLimitPolicyHeader([subjects[0]!, { scope: 'consumer', id: 'con_2', plan: plan() }], now)).toBe(
      '"burst";q=10;w=1',
    );
    const rule = ruleOf({ limit: 600, period: 'minute' });
    expect(rateLimitHeader({ scope: 'consumer', rule, remaining: 12, resetMs: now + 29_500 }, now)).toBe(
      '"consumer.minute";r=12;t=30',
    );
  });

  it('states what remains of the reported limit and whole seconds until its reset, at least 1', () => {
    const rule = ruleOf({ limit: 10, period: 'minute', name: 'per-minute' });
    expect(rateLimitHeader({ scope: 'key', rule, remaining: 7, resetMs: now + 29_500 }, now)).toBe(
      '"per-minute";r=7;t=30',
    );
    expect(rateLimitHeader({ scope: 'key', rule, remaining: 0, resetMs: now + 10 }, now)).toBe(
      '"per-minute";r=0;t=1',
    );
  });

  it('formats resetTime without fraction', () => {
    expect(isoSeconds(Date.UTC(2026, 0, 5, 11, 0, 0))).toBe('2026-01-05T11:00:00Z');
  });
});
