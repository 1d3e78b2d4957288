/**
 * Verify decides and counts a request as the proxy does (docs/guides/verify-and-client.md): one table of the cases
 * the proxy's tests cover, each run through the proxy with one key and through verify with its twin (a
 * key made the same way), in both modes. Verify is asked as @tollgate/client's middleware asks it
 * (`passGate`), so what is compared is what an end client gets: the same status, body and Tollgate
 * headers, the same code, and the same usage, each request counted once.
 */
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { passGate, type GateOutcome } from '../../packages/client/src/gate.js';
import { balanceSet, type Refill } from '../../src/plans/balance.js';
import { CreditRepository } from '../../src/store/credit-repository.js';
import type { Scope } from '../../src/plans/subject.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { sleep, waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness, type UsageOfTheDay } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

/** The headers Tollgate itself sets on an answer (not Date, Connection, x-request-id or the backend's). */
const TOLLGATE_HEADERS = [
  'retry-after',
  'ratelimit-policy',
  'ratelimit',
  'www-authenticate',
  'content-type',
  'content-length',
] as const;
const RATE_LIMIT_HEADERS = ['ratelimit-policy', 'ratelimit'] as const;

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | null>;
  readonly body: string;
}

interface Key {
  readonly id: string;
  readonly secret: string;
}

/** A request as the end client sends it. */
interface Sent {
  readonly path: string;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly clientAddress: string;
}

const pick = (headers: Record<string, unknown>, names: readonly string[]) =>
  Object.fromEntries(names.map((name) => [name, headers[name] === undefined ? null : String(headers[name])]));

/** The request through the proxy, from `clientAddress` (TRUST_PROXY=1: its X-Forwarded-For). */
function throughProxy(h: ProxyHarness, sent: Sent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: h.port,
        path: sent.path,
        method: sent.method,
        headers: { ...sent.headers, 'x-forwarded-for': sent.clientAddress },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: pick(res.headers, TOLLGATE_HEADERS), body }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The request verified as the middleware verifies it. */
function throughVerify(h: ProxyHarness, sent: Sent): Promise<GateOutcome> {
  return passGate(
    { baseUrl: h.base, token: h.rootToken, clock: () => h.now },
    { headers: sent.headers, method: sent.method, url: sent.path, clientAddress: sent.clientAddress },
  );
}

/** The management API with the root token. */
async function api(h: ProxyHarness, method: string, path: string, body?: unknown) {
  const res = await fetch(h.base + path, {
    method,
    headers: { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
  const answer = { status: res.status, body: (await res.json()) as any };
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(answer.body)}`);
  return answer;
}

const id = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

/** What a row's keys are made with. */
interface Making {
  /** Settings of the key's create body. */
  readonly key?: Record<string, unknown>;
  /** The key's plan (create body less its id). */
  readonly plan?: Record<string, unknown>;
  /** A consumer of its own for the key, with this plan. */
  readonly consumerPlan?: Record<string, unknown>;
  /** A balance, on the key or on its consumer. */
  readonly credits?: { scope: Scope; remaining: number; refill: Refill | null };
}

async function makeKey(h: ProxyHarness, making: Making): Promise<Key> {
  const body: Record<string, unknown> = { name: id('twin'), ...making.key };
  if (making.plan) {
    body.rateLimitId = id('plan');
    await api(h, 'POST', '/rate-limit/create', { rateLimitId: body.rateLimitId, ...making.plan });
  }
  if (making.consumerPlan || making.credits?.scope === 'consumer') {
    let rateLimitId: string | undefined;
    if (making.consumerPlan) {
      rateLimitId = id('consumer-plan');
      await api(h, 'POST', '/rate-limit/create', { rateLimitId, ...making.consumerPlan });
    }
    body.consumerId = (
      await api(h, 'POST', '/tollgate/consumers', { name: id('c'), rateLimitId })
    ).body.consumerId;
  }
  const created = (await api(h, 'POST', '/consumer-api-key/create', body)).body;
  if (making.credits) {
    // The management API's credits are another issue's: the balance is written as it would store it.
    const { scope, remaining, refill } = making.credits;
    const holder = scope === 'key' ? created.id : body.consumerId;
    const balance = balanceSet(0, remaining, refill, null, Date.now());
    await new CreditRepository(h.db.db).set(scope, holder, balance, balance.epoch, new Date());
  }
  return { id: created.id, secret: created.secret };
}

interface Row {
  readonly name: string;
  readonly status: number;
  readonly code: string;
  readonly path?: string;
  readonly method?: string;
  readonly host?: string;
  /** The page the request comes from (`Origin`): the middleware passes it to verify. */
  readonly origin?: string;
  /** How the key is presented: `bearer` (default), `x-api-key`, `none`, or `unknown` (a key that does not exist). */
  readonly credential?: 'bearer' | 'x-api-key' | 'none' | 'unknown';
  readonly making?: Making;
  /** Each twin first makes this request once through its own side, admitted (it spends a limit). */
  readonly spentFirst?: boolean;
  /** Before the requests: wrong keys from the row's address, half through the proxy, half through verify. */
  readonly wrongKeysFirst?: number;
  /** What usage shows of each twin once the row ran (both sides alike); absent: nothing (no valid key). */
  readonly usage?: Pick<UsageOfTheDay, 'requests' | 'successful' | 'failed' | 'cost'> & {
    outcome?: string;
  };
}

const DAILY_REFILL: Refill = { amount: 10, interval: 'day', dayOfMonth: 1 };

const ROWS: readonly Row[] = [
  { name: 'no credential', credential: 'none', status: 401, code: 'missing_api_key' },
  { name: 'a key that does not exist', credential: 'unknown', status: 401, code: 'invalid_api_key' },
  {
    name: 'a disabled key, presented as x-api-key',
    credential: 'x-api-key',
    making: { key: { enabled: false } },
    status: 403,
    code: 'key_disabled',
    usage: { requests: 1, successful: 0, failed: 1, cost: 0, outcome: 'disabled' },
  },
  {
    name: 'an expired key',
    making: { key: { expiresAt: '2020-01-01T00:00:00Z' }, plan: { limit: 5, period: 'day' } },
    status: 401,
    code: 'key_expired',
    usage: { requests: 1, successful: 0, failed: 1, cost: 0, outcome: 'expired' },
  },
  {
    name: 'a key over a limit of its own plan of two',
    making: {
      plan: {
        limits: [
          { limit: 1, period: 'day' },
          { limit: 100, period: 'hour', name: 'hourly' },
        ],
      },
    },
    spentFirst: true,
    status: 429,
    code: 'rate_limit_exceeded',
    usage: { requests: 2, successful: 1, failed: 1, cost: 1, outcome: 'rateLimited' },
  },
  {
    name: "a key over its consumer's limit",
    making: { plan: { limit: 10, period: 'minute' }, consumerPlan: { limit: 1, period: 'day' } },
    spentFirst: true,
    status: 429,
    code: 'rate_limit_exceeded',
    usage: { requests: 2, successful: 1, failed: 1, cost: 1, outcome: 'rateLimited' },
  },
  {
    name: 'a key tied to a web page, called from that page',
    making: { key: { allowedOrigins: ['https://app.example.com'] }, plan: { limit: 5, period: 'day' } },
    origin: 'https://app.example.com',
    status: 200,
    code: 'ok',
    usage: { requests: 1, successful: 1, failed: 0, cost: 1 },
  },
  {
    name: 'a key tied to a web page, called from another',
    making: { key: { allowedOrigins: ['https://app.example.com'] }, plan: { limit: 5, period: 'day' } },
    origin: 'https://elsewhere.example.net',
    status: 403,
    code: 'origin_not_allowed',
    usage: { requests: 1, successful: 0, failed: 1, cost: 0, outcome: 'originNotAllowed' },
  },
  {
    name: 'a key on a route it may not take (the catch-all)',
    making: { key: { allowedRouteIds: ['reports'] }, plan: { limit: 5, period: 'day' } },
    path: '/v1/items',
    status: 403,
    code: 'route_not_allowed',
    usage: { requests: 1, successful: 0, failed: 1, cost: 0, outcome: 'routeNotAllowed' },
  },
  {
    name: 'an address that sent too many wrong keys, through both',
    credential: 'unknown',
    wrongKeysFirst: 100,
    status: 429,
    code: 'too_many_failed_attempts',
  },
  {
    name: 'a key whose balance is spent until its daily refill',
    making: { credits: { scope: 'key', remaining: 0, refill: DAILY_REFILL } },
    status: 429,
    code: 'credits_exhausted',
    usage: { requests: 1, successful: 0, failed: 1, cost: 0, outcome: 'creditsExhausted' },
  },
  {
    name: "a request costing more than its consumer's balance holds, with no refill",
    making: {
      plan: { limit: 100, period: 'day', costs: [{ match: { pathPrefix: '/v1/reports' }, cost: 5 }] },
      credits: { scope: 'consumer', remaining: 2, refill: null },
    },
    path: '/v1/reports/7',
    status: 429,
    code: 'credits_exhausted',
    usage: { requests: 1, successful: 0, failed: 1, cost: 0, outcome: 'creditsExhausted' },
  },
  {
    name: 'a request that costs 5 units on its route',
    making: {
      plan: {
        limits: [{ limit: 100, period: 'day' }],
        costs: [{ match: { routeIds: ['reports'], methods: ['POST'] }, cost: 5 }],
      },
    },
    path: '/v1/reports/7',
    method: 'POST',
    status: 200,
    code: 'ok',
    usage: { requests: 1, successful: 1, failed: 0, cost: 5 },
  },
  {
    name: 'an admitted request',
    making: { plan: { limit: 10, period: 'day' } },
    status: 200,
    code: 'ok',
    usage: { requests: 1, successful: 1, failed: 0, cost: 1 },
  },
  {
    name: "an admitted request on a route of the key's, by its host",
    making: { key: { allowedRouteIds: ['tenant'] }, plan: { limit: 10, period: 'hour' } },
    host: 'Tenant.Example.com',
    status: 200,
    code: 'ok',
    usage: { requests: 1, successful: 1, failed: 0, cost: 1 },
  },
  {
    name: 'an admitted request charged to the key balance and its consumer limit',
    making: {
      consumerPlan: { limit: 50, period: 'week' },
      credits: { scope: 'key', remaining: 10, refill: null },
    },
    status: 200,
    code: 'ok',
    usage: { requests: 1, successful: 1, failed: 0, cost: 1 },
  },
];

/**
 * The start of the app clock's next second, never behind the wall clock: `Retry-After` and RateLimit's
 * `t` count whole seconds, and each row starts a second of its own. The proxy, verify and the middleware
 * all read `h.now`, so nothing waits for the wall clock.
 */
const nextSecond = (h: ProxyHarness) => Math.ceil((Math.max(Date.now(), h.now) + 1) / 1_000) * 1_000 + 5;

const HARNESS = { env: { TRUST_PROXY: '1' } } as const;

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;
  /** Each twin with what its usage must show, checked again once every flush has run. */
  const counted: { key: Key; usage: UsageOfTheDay }[] = [];

  beforeAll(async () => {
    h.now = Date.now();
    stop = await mode.start(h, HARNESS);
    const backend = h.config.upstreamUrl!.toString();
    await api(h, 'POST', '/tollgate/routes', {
      routeId: 'reports',
      match: { pathPrefix: '/v1/reports' },
      upstreamUrl: backend,
    });
    await api(h, 'POST', '/tollgate/routes', {
      routeId: 'tenant',
      match: { host: 'tenant.example.com', pathPrefix: '/' },
      upstreamUrl: backend,
    });
    // In force on the proxy within 1 s (docs/guides/routes.md).
    await sleep(1_100);
  }, 60_000);

  afterAll(async () => {
    await stop?.();
  });

  it.each(ROWS.map((row, i) => ({ ...row, address: `198.51.100.${i + 1}` })))(
    '$name: $status $code',
    async (row) => {
      const [forProxy, forVerify] = row.making
        ? [await makeKey(h, row.making), await makeKey(h, row.making)]
        : [undefined, undefined];
      const sent = (key: Key | undefined): Sent => {
        const secret =
          row.credential === 'unknown' ? 'tg_' + randomBytes(32).toString('base64url') : key?.secret;
        const headers: Record<string, string> = {
          host: row.host ?? `127.0.0.1:${h.port}`,
          'x-customer-id': 'cus-' + row.address,
          ...(row.origin !== undefined && { origin: row.origin }),
        };
        if (row.credential === 'x-api-key') headers['x-api-key'] = secret!;
        else if (row.credential !== 'none') headers.authorization = `Bearer ${secret}`;
        return {
          path: row.path ?? '/v1/items',
          method: row.method ?? 'GET',
          headers,
          clientAddress: row.address,
        };
      };
      // Frozen for the row: both sides decide at the same instant.
      h.now = nextSecond(h);
      if (row.spentFirst) {
        expect((await throughProxy(h, sent(forProxy))).status).toBe(200);
        expect((await throughVerify(h, sent(forVerify))).admitted).toBe(true);
      }
      for (let i = 0; i < (row.wrongKeysFirst ?? 0) / 2; i++) {
        expect((await throughProxy(h, sent(undefined))).status).toBe(401);
        expect((await throughVerify(h, sent(undefined))).answer?.code).toBe('invalid_api_key');
      }

      const proxied = await throughProxy(h, sent(forProxy));
      const verified = await throughVerify(h, sent(forVerify));

      expect(proxied.status).toBe(row.status);
      expect(row.status === 200 ? 'ok' : JSON.parse(proxied.body).code).toBe(row.code);
      expect(verified.answer?.code ?? 'missing_api_key').toBe(row.code);
      expect(verified.answer?.valid ?? false).toBe(row.status === 200);
      if (verified.admitted) {
        // The backend's answer, plus the RateLimit headers the proxy adds: the middleware adds the same.
        expect(pick(verified.headers, RATE_LIMIT_HEADERS)).toEqual(pick(proxied.headers, RATE_LIMIT_HEADERS));
      } else {
        const { status, headers, body } = verified.response;
        expect({ status, headers: pick(headers, TOLLGATE_HEADERS), body }).toEqual(proxied);
      }
      if (forVerify !== undefined)
        expect(verified.answer).toMatchObject({ consumerApiKeyId: forVerify.id, name: expect.any(String) });

      if (row.usage === undefined) {
        expect(verified.answer?.consumerApiKeyId).toBeUndefined();
        return;
      }
      // The day's totals and its series are read apart: a flush may land between the reads, so wait for all.
      const whole = (usage: UsageOfTheDay) =>
        usage.requests >= row.usage!.requests &&
        usage.endpoints.length > 0 &&
        Object.values(usage.customers).reduce((a, b) => a + b, 0) >= row.usage!.requests &&
        usage.routes.reduce((sum, [, requests]) => sum + requests, 0) >= row.usage!.requests;
      const usageOf = async (key: Key) => (await waitFor(() => h.usage(key.id), whole)).value;
      const [ofProxy, ofVerify] = [await usageOf(forProxy!), await usageOf(forVerify!)];
      expect(ofVerify).toEqual(ofProxy);
      const { outcome, ...totals } = row.usage;
      expect(ofProxy).toMatchObject({
        ...totals,
        endpoints: [row.path ?? '/v1/items'],
        customers: { ['cus-' + row.address]: totals.requests },
      });
      expect(Object.entries(ofProxy.outcomes).filter(([, n]) => n > 0)).toEqual(
        outcome === undefined ? [] : [[outcome, 1]],
      );
      counted.push({ key: forProxy!, usage: ofProxy }, { key: forVerify!, usage: ofVerify });
    },
    30_000,
  );

  it('counted each request once, after every flush', async () => {
    expect(counted.length).toBe(2 * ROWS.filter((row) => row.usage).length);
    // Usage reaches its store every second (Redis mode: then Postgres): reads after it must not add up anew.
    await h.flushed();
    for (const { key, usage } of counted) expect(await h.usage(key.id)).toEqual(usage);
  }, 60_000);
});
