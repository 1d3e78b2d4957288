// @tollgate/client's answers from verify answers, in the cases a live proxy is slow to reach: limits of
// a key and its consumer, calendar months and years, sliding windows, and answers it cannot make sense
// of. tests/e2e/client-middleware.test.ts and tests/integration/verify-as-proxy.test.ts compare the
// others with a real proxy.
import { admittedHeaders, missingKeyResponse, refusalOf } from '../../packages/client/src/proxy-answer.js';
import type { VerifyAnswer, VerifyLimit } from '../../packages/client/src/verify-types.js';

const limit = (
  fields: Partial<VerifyLimit> & Pick<VerifyLimit, 'name' | 'period' | 'resetTime'>,
): VerifyLimit => ({
  limit: 10,
  remaining: 5,
  scope: 'key',
  algorithm: 'fixed',
  per: 'key',
  ...fields,
});

const refused = (fields: Partial<VerifyAnswer>): VerifyAnswer => ({
  valid: false,
  code: 'rate_limit_exceeded',
  limits: [],
  ...fields,
});

describe('a refusal as the proxy answers it', () => {
  it('names the refusing limit whose window ends last, in the body, Retry-After and RateLimit', () => {
    const response = refusalOf(
      refused({
        limits: [
          limit({
            name: 'second',
            period: 'second',
            limit: 5,
            remaining: 0,
            resetTime: '2025-06-10T12:00:01Z',
          }),
          limit({ name: 'day', period: 'day', limit: 100, remaining: 0, resetTime: '2025-06-11T00:00:00Z' }),
        ],
        resetTime: '2025-06-11T00:00:00Z',
        retryAfterSeconds: 43_200,
      }),
    );
    expect(response).toEqual({
      status: 429,
      headers: {
        'retry-after': '43200',
        'ratelimit-policy': '"second";q=5;w=1, "day";q=100;w=86400',
        ratelimit: '"day";r=0;t=43200',
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(response.body)),
      },
      body: '{"error":"Rate limit exceeded","code":"rate_limit_exceeded","limit":100,"period":"day","remaining":0,"resetTime":"2025-06-11T00:00:00Z","name":"day","scope":"key","per":"key"}',
    });
  });

  it("names the consumer's limit that refused when the key's limit ends at the same time with room", () => {
    const response = refusalOf(
      refused({
        limits: [
          limit({ name: 'day', period: 'day', limit: 100, remaining: 40, resetTime: '2025-06-11T00:00:00Z' }),
          limit({
            name: 'consumer.day',
            period: 'day',
            limit: 1000,
            remaining: 0,
            resetTime: '2025-06-11T00:00:00Z',
            scope: 'consumer',
          }),
        ],
        resetTime: '2025-06-11T00:00:00Z',
        retryAfterSeconds: 600,
      }),
    );
    expect(JSON.parse(response.body)).toMatchObject({ name: 'consumer.day', limit: 1000 });
    expect(response.headers.ratelimit).toBe('"consumer.day";r=0;t=600');
    expect(response.headers['ratelimit-policy']).toBe('"day";q=100;w=86400, "consumer.day";q=1000;w=86400');
  });

  it('announces the calendar month or year a fixed limit counts in, and 30 or 365 days for a sliding one', () => {
    const policyOf = (limits: VerifyLimit[]) =>
      refusalOf(refused({ limits, resetTime: limits[0]!.resetTime, retryAfterSeconds: 1 })).headers[
        'ratelimit-policy'
      ];
    const month = (resetTime: string, algorithm: VerifyLimit['algorithm'] = 'fixed') =>
      limit({ name: 'month', period: 'month', remaining: 0, resetTime, algorithm });
    const year = (resetTime: string, algorithm: VerifyLimit['algorithm'] = 'fixed') =>
      limit({ name: 'year', period: 'year', remaining: 0, resetTime, algorithm });
    expect(policyOf([month('2025-03-01T00:00:00Z')])).toBe(`"month";q=10;w=${28 * 86_400}`);
    expect(policyOf([month('2024-03-01T00:00:00Z')])).toBe(`"month";q=10;w=${29 * 86_400}`);
    expect(policyOf([month('2025-01-01T00:00:00Z')])).toBe(`"month";q=10;w=${31 * 86_400}`);
    expect(policyOf([month('2025-03-17T13:00:00Z', 'sliding')])).toBe(`"month";q=10;w=${30 * 86_400}`);
    expect(policyOf([year('2025-01-01T00:00:00Z')])).toBe(`"year";q=10;w=${366 * 86_400}`);
    expect(policyOf([year('2026-01-01T00:00:00Z')])).toBe(`"year";q=10;w=${365 * 86_400}`);
    expect(policyOf([year('2025-08-01T00:00:00Z', 'sliding')])).toBe(`"year";q=10;w=${365 * 86_400}`);
  });

  it('answers a throttled address 429 with Retry-After and no challenge, a disabled key 403', () => {
    const throttled = refusalOf(refused({ code: 'too_many_failed_attempts', retryAfterSeconds: 17 }));
    expect(throttled.status).toBe(429);
    expect(throttled.headers['retry-after']).toBe('17');
    expect(throttled.headers['www-authenticate']).toBeUndefined();
    expect(JSON.parse(throttled.body)).toEqual({
      error: 'Too many failed authentication attempts',
      code: 'too_many_failed_attempts',
    });
    const disabled = refusalOf(refused({ code: 'key_disabled' }));
    expect([disabled.status, disabled.headers['www-authenticate']]).toEqual([403, undefined]);
    const elsewhere = refusalOf(refused({ code: 'route_not_allowed' }));
    expect([elsewhere.status, JSON.parse(elsewhere.body)]).toEqual([
      403,
      { error: 'The API key is not allowed on this route', code: 'route_not_allowed' },
    ]);
    expect(missingKeyResponse().headers['www-authenticate']).toBe('Bearer');
  });

  it('answers credits_exhausted with the short balance and the cost, Retry-After only with a refill', () => {
    const refilled = refusalOf(
      refused({
        code: 'credits_exhausted',
        cost: 5,
        credits: { remaining: 3, scope: 'consumer', resetTime: '2025-06-11T00:00:00Z' },
        resetTime: '2025-06-11T00:00:00Z',
        retryAfterSeconds: 43_200,
      }),
    );
    expect(refilled).toEqual({
      status: 429,
      headers: {
        'retry-after': '43200',
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(refilled.body)),
      },
      body: '{"error":"The credit balance does not hold the cost of this request","code":"credits_exhausted","remaining":3,"cost":5,"scope":"consumer","resetTime":"2025-06-11T00:00:00Z"}',
    });
    const spent = refusalOf(
      refused({
        code: 'credits_exhausted',
        cost: 1,
        credits: { remaining: 0, scope: 'key', resetTime: null },
        resetTime: null,
      }),
    );
    expect(spent.headers['retry-after']).toBeUndefined();
    expect(JSON.parse(spent.body)).toMatchObject({ remaining: 0, cost: 1, scope: 'key', resetTime: null });
  });

  it('answers 404 route_not_found for a path no route takes, as the proxy without a catch-all', () => {
    const nowhere = refusalOf(refused({ code: 'route_not_found' }));
    expect([nowhere.status, JSON.parse(nowhere.body)]).toEqual([
      404,
      { error: 'No route found', code: 'route_not_found' },
    ]);
  });

  it('fails loudly on an answer it cannot make the proxy answer of, rather than answering it wrong', () => {
    expect(() => refusalOf(refused({ code: 'credits_exhausted' }))).toThrow(/credits and cost/);
    expect(() => refusalOf(refused({ code: 'ok' as never }))).toThrow(/"ok"/);
    expect(() =>
      refusalOf(refused({ limits: [], resetTime: '2025-06-11T00:00:00Z', retryAfterSeconds: 5 })),
    ).toThrow(/resetTime/);
  });
});

describe('the RateLimit headers of an admitted request', () => {
  const now = Date.parse('2025-06-10T12:00:00Z');

  it('report the limit with the fewest left, and of those the one whose window ends last', () => {
    const answer: VerifyAnswer = {
      valid: true,
      code: 'ok',
      limits: [
        limit({
          name: 'minute',
          period: 'minute',
          limit: 60,
          remaining: 3,
          resetTime: '2025-06-10T12:01:00Z',
        }),
        limit({ name: 'day', period: 'day', limit: 1000, remaining: 3, resetTime: '2025-06-11T00:00:00Z' }),
        limit({
          name: 'consumer.hour',
          period: 'hour',
          limit: 500,
          remaining: 4,
          resetTime: '2025-06-10T13:00:00Z',
          scope: 'consumer',
        }),
      ],
    };
    expect(admittedHeaders(answer, now)).toEqual({
      'ratelimit-policy': '"minute";q=60;w=60, "day";q=1000;w=86400, "consumer.hour";q=500;w=3600',
      ratelimit: '"day";r=3;t=43200',
    });
  });

  it('are absent when no limit applies', () => {
    expect(admittedHeaders({ valid: true, code: 'ok', limits: [] }, now)).toEqual({});
  });
});
