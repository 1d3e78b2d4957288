/**
 * Hostile input to every management endpoint, generated with fast-check, in process over embedded
 * PGlite: every bad request gets the documented 4xx as a JSON error envelope (never a 5xx), and the
 * stored keys and plans are byte-for-byte the same afterwards. The counts are printed for the report.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type Server,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import { PERIODS } from '../../src/plans/window.js';
import { createManagementApp } from '../../src/management/app.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { openEmbedded, type DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { DatabaseUsageSink } from '../../src/usage/database-usage-sink.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { managementDeps } from '../helpers/management-storage.js';

const ROOT_TOKEN = 'root_' + randomBytes(24).toString('base64url');
const RUNS = Number(process.env.FUZZ_RUNS ?? 120);
const MAX_BODY = 64 * 1024;

const logLines: string[] = [];
const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });

/** The figures for the closing note. */
const tally = {
  badInputsTried: 0,
  answers5xx: 0,
  byStatus: {} as Record<string, number>,
  unexpected: [] as string[],
};

let dir: string;
let handle: DbHandle;
let limiter: MemoryRateLimiter;
let server: Server;
let port: number;
const agent = new Agent({ keepAlive: true, maxSockets: 4 });
const secrets: string[] = [];
let keyIds: string[] = [];
const planIds = ['fuzz-gold', 'fuzz-silver'];

/** Everything a bad request could have changed: keys (with their bindings and ciphertexts), plans, usage. */
async function snapshot(): Promise<unknown> {
  const db = handle.db;
  return {
    keys: await db.selectFrom('api_keys').selectAll().orderBy('seq').execute(),
    plans: await db.selectFrom('rate_limit_plans').selectAll().orderBy('rate_limit_id').execute(),
    endpoints: await db.selectFrom('usage_endpoints').selectAll().execute(),
    customers: await db.selectFrom('usage_customers').selectAll().execute(),
  };
}

/**
 * Records one bad request's answer: it must be one of `allowed` and a JSON error envelope. Returns a
 * failure message rather than throwing, so fast-check shrinks to the smallest offending input.
 */
function judge(label: string, res: Res, allowed: readonly number[]): boolean {
  tally.badInputsTried++;
  tally.byStatus[res.status] = (tally.byStatus[res.status] ?? 0) + 1;
  if (res.status >= 500) tally.answers5xx++;
  const body = (res.body ?? {}) as { code?: unknown; error?: unknown };
  const ok =
    allowed.includes(res.status) &&
    /^application\/json/.test(res.headers['content-type'] ?? '') &&
    typeof body.code === 'string' &&
    typeof body.error === 'string';
  if (!ok && tally.unexpected.length < 20) {
    tally.unexpected.push(`${label}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
  }
  return ok;
}

// ---------------------------------------------------------------- arbitraries

/** Names that JavaScript objects, Express or JSON tooling treat specially. */
const specialKey = fc.constantFrom(
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  '$ref',
  '',
  '\u0000',
);

const hugeString = fc.integer({ min: 201, max: 20_000 }).map((n) => 'x'.repeat(n));
const oddString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '../../etc/passwd',
    "'; drop table api_keys; --",
    '${jndi:ldap://x/a}',
    '<script>alert(1)</script>',
    '%00',
    '\ud800',
    '🔑',
    'gold plan',
    'UPPER/lower',
  ),
  hugeString,
);
const oddNumber = fc.oneof(
  fc.double(),
  fc.integer({ min: -(2 ** 31), max: 0 }),
  fc.constantFrom(0, -0, -1, 0.5, 1.5, 2 ** 53, 2 ** 53 + 2, 2 ** 64, 1e308, -1e308, Number.MIN_VALUE),
);
/**
 * Deep nesting travels as raw JSON text (JSON.stringify itself would overflow the test's stack):
 * `serialize` splices it in where this marker object stands.
 */
class RawJson {
  constructor(readonly text: string) {}
}
const nested = fc.integer({ min: 50, max: 8_000 }).map((depth) => {
  const open = Array.from({ length: depth }, (_, i) => (i % 2 === 0 ? '[' : '{"a":')).join('');
  const close = Array.from({ length: depth }, (_, i) => (i % 2 === 0 ? ']' : '}'))
    .reverse()
    .join('');
  return new RawJson(open + '"bottom"' + close);
});

const RAW_MARK = '@@raw' + randomBytes(4).toString('hex');
/** JSON text of a generated value, with every RawJson spliced in. */
function serialize(value: unknown): string {
  const raws: string[] = [];
  const text =
    JSON.stringify(value, (_k, v: unknown) => {
      if (v instanceof RawJson) {
        raws.push(v.text);
        return `${RAW_MARK}${raws.length - 1}@@`;
      }
      return v;
    }) ?? '';
  return raws.length === 0
    ? text
    : text.replace(new RegExp(`"${RAW_MARK}(\\d+)@@"`, 'g'), (_m, i: string) => raws[Number(i)]!);
}
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  oddString,
  oddNumber,
  fc.boolean(),
  fc.constant(null),
  fc.jsonValue({ maxDepth: 3 }),
  fc.array(oddString, { maxLength: 4 }),
  nested,
  // A special key inside a nested object: `{"__proto__": {"polluted": true}}`.
  specialKey.map((k) => Object.fromEntries([[k, { polluted: true }]])),
);

/**
 * An object built from entries with Object.fromEntries, so `__proto__` becomes an own property (as
 * JSON.parse makes it on the server) and JSON.stringify sends it.
 */
function objectOf(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> {
  const known = Object.entries(fields).map(([name, arb]) =>
    fc.option(
      arb.map((v) => [name, v] as const),
      { nil: undefined },
    ),
  );
  const extra = fc.array(fc.tuple(fc.oneof(specialKey, fc.string({ maxLength: 12 })), anyValue), {
    maxLength: 3,
  });
  return fc
    .tuple(fc.tuple(...known), extra)
    .map(([k, e]) => Object.fromEntries([...k.filter((x) => x !== undefined), ...e]));
}

/** Any top-level JSON document: objects for the endpoint, plus arrays, strings, numbers, null. */
function bodyOf(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 6, arbitrary: objectOf(fields) },
    { weight: 1, arbitrary: anyValue },
    { weight: 1, arbitrary: fc.constantFrom([], [{}], 'name', 0, null, true) },
  );
}

// Independent of the server's validators: the OpenAPI document's rules, so accidental valid bodies are skipped.
const isPlain = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const only = (v: Record<string, unknown>, allowed: string[]) =>
  Object.keys(v).every((k) => allowed.includes(k));
const chars = (s: string) => [...s].length;
const validName = (v: unknown) =>
  typeof v === 'string' && chars(v) >= 1 && chars(v) <= 200 && !v.includes('\u0000');
const validPlanId = (v: unknown) => typeof v === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(v);
const validKeyId = (v: unknown) => typeof v === 'string' && /^[A-Za-z0-9._~:-]{1,128}$/.test(v);

function validCreateKey(b: unknown): boolean {
  return isPlain(b) && only(b, ['name']) && validName(b.name);
}
function validCreatePlan(b: unknown): boolean {
  return (
    isPlain(b) &&
    only(b, ['rateLimitId', 'description', 'limit', 'period']) &&
    validPlanId(b.rateLimitId) &&
    (b.description === undefined ||
      (typeof b.description === 'string' &&
        chars(b.description) <= 1000 &&
        !b.description.includes('\u0000'))) &&
    Number.isInteger(b.limit) &&
    (b.limit as number) >= 1 &&
    (b.limit as number) <= Number.MAX_SAFE_INTEGER &&
    (PERIODS as readonly unknown[]).includes(b.period)
  );
}
function validApplyPlan(b: unknown): boolean {
  return (
    isPlain(b) &&
    only(b, ['consumerApiKeyId', 'rateLimitId']) &&
    validKeyId(b.consumerApiKeyId) &&
    validPlanId(b.rateLimitId)
  );
}

// ---------------------------------------------------------------- set-up

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tg-fuzz-'));
  handle = await openEmbedded(dir);
  await migrate(handle);
  const metrics = new Metrics();
  const usageRepository = new UsageRepository(handle.db);
  const recorder = new UsageRecorder(new DatabaseUsageSink(usageRepository), logger, metrics);
  limiter = new MemoryRateLimiter();
  const app = createManagementApp(
    managementDeps(handle.db, {
      usage: new UsageReader(usageRepository, [recorder]),
      limiter,
      rootToken: ROOT_TOKEN,
      logger,
      metrics,
    }),
  );
  // One listening server, one keep-alive agent for every request.
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;

  for (const name of ['fuzz one', 'fuzz two', 'fuzz three']) {
    const res = await postRaw('/consumer-api-key/create', JSON.stringify({ name }));
    expect(res.status).toBe(201);
    secrets.push(res.body.secret);
  }
  keyIds = (await handle.db.selectFrom('api_keys').select('id').orderBy('seq').execute()).map((r) => r.id);
  for (const rateLimitId of planIds) {
    const res = await postRaw(
      '/rate-limit/create',
      JSON.stringify({ rateLimitId, limit: 10, period: 'minute' }),
    );
    expect(res.status).toBe(201);
  }
  const bound = await postRaw(
    '/api-keys/apply-rate-limit',
    JSON.stringify({ consumerApiKeyId: keyIds[0], rateLimitId: planIds[0] }),
  );
  expect(bound.status).toBe(200);
}, 60_000);

let before: unknown;
beforeAll(async () => {
  before = await snapshot();
});

afterAll(async () => {
  agent.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await limiter.close();
  await handle.close();
  await rm(dir, { recursive: true, force: true });
  console.log(`management fuzz figures: ${JSON.stringify(tally)}`);
});

const auth = { Authorization: `Bearer ${ROOT_TOKEN}` };

interface Res {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
  readonly body: any;
}

/**
 * One request with node:http, bytes exactly as given (no client picks a content type or re-encodes a
 * body). The body of the answer is parsed as JSON when it is JSON.
 */
function call(
  method: string,
  path: string,
  options: { body?: string | Buffer; type?: string; token?: boolean; headers?: Record<string, string> } = {},
): Promise<Res> {
  const headers: Record<string, string | number> = { ...options.headers };
  if (options.token !== false) Object.assign(headers, auth);
  if (options.type !== undefined) headers['content-type'] = options.type;
  if (options.body !== undefined) headers['content-length'] = Buffer.byteLength(options.body);
  return new Promise((resolve, reject) => {
    // Host, port and path separately: a URL would be normalised (`/%2e%2e/x` → `/x`) before sending.
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // Not JSON: judge() refuses it.
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** POST a raw body (string or bytes) with the given content type. */
function postRaw(
  path: string,
  body: string | Buffer,
  type: string | null = 'application/json',
  token = true,
): Promise<Res> {
  return call('POST', path, { body, type: type ?? undefined, token });
}

/** Percent-encoding that also takes lone surrogates (encodeURIComponent throws on them). */
const pct = (s: string): string => encodeURIComponent(s.toWellFormed());

const params = { numRuns: RUNS, endOnFailure: true } as const;

// ---------------------------------------------------------------- bodies

const ENDPOINTS = [
  {
    path: '/consumer-api-key/create',
    body: bodyOf({ name: fc.oneof(oddString, anyValue) }),
    valid: validCreateKey,
    allowed: [400],
  },
  {
    path: '/rate-limit/create',
    body: bodyOf({
      rateLimitId: fc.oneof(oddString, anyValue, fc.constantFrom('ok-id', ...planIds)),
      description: fc.oneof(
        oddString,
        anyValue,
        fc.integer({ min: 1001, max: 3000 }).map((n) => 'd'.repeat(n)),
      ),
      limit: fc.oneof(oddNumber, anyValue, fc.constantFrom(10, '10', 2 ** 53 - 1)),
      period: fc.oneof(oddString, anyValue, fc.constantFrom(...PERIODS, 'Hour', 'hours', 'year', ' day')),
    }),
    valid: validCreatePlan,
    allowed: [400],
  },
  {
    path: '/api-keys/apply-rate-limit',
    body: bodyOf({
      consumerApiKeyId: fc.oneof(oddString, anyValue, fc.constant('key_unknown')),
      rateLimitId: fc.oneof(oddString, anyValue, fc.constantFrom('no-such-plan', ...planIds)),
    }),
    valid: validApplyPlan,
    allowed: [400],
  },
] as const;

/**
 * The lifecycle calls (docs/guides/keys.md, plans.md, admin-tokens-and-audit.md) with generated bodies, valid or not. Aimed at ids
 * that do not exist, a valid body is answered 404 and an invalid one 400: either way nothing is
 * stored, nothing crashes. Admin tokens have no target: a valid body creates one (201).
 */
const LIFECYCLE_CALLS = [
  {
    label: 'PATCH /consumer-api-key/{id}',
    method: 'PATCH',
    path: '/consumer-api-key/key_fuzz_missing',
    body: bodyOf({
      name: oddString,
      enabled: anyValue,
      expiresAt: fc.oneof(oddString, anyValue),
      externalId: oddString,
      metadata: anyValue,
    }),
    allowed: [400, 404],
  },
  {
    label: 'POST /consumer-api-key/{id}/roll',
    method: 'POST',
    path: '/consumer-api-key/key_fuzz_missing/roll',
    body: bodyOf({ gracePeriodSeconds: fc.oneof(oddNumber, anyValue, fc.constantFrom(0, 604_800, 604_801)) }),
    allowed: [400, 404],
  },
  {
    label: 'PATCH /rate-limit/{id}',
    method: 'PATCH',
    path: '/rate-limit/fuzz-missing',
    body: bodyOf({
      description: oddString,
      limit: fc.oneof(oddNumber, anyValue),
      period: fc.oneof(oddString, fc.constantFrom(...PERIODS)),
    }),
    allowed: [400, 404],
  },
  {
    label: 'POST /api-keys/remove-rate-limit',
    method: 'POST',
    path: '/api-keys/remove-rate-limit',
    body: bodyOf({ consumerApiKeyId: fc.oneof(oddString, anyValue, fc.constant('key_unknown')) }),
    allowed: [400, 404],
  },
  {
    label: 'POST /tollgate/admin-tokens',
    method: 'POST',
    path: '/tollgate/admin-tokens',
    body: bodyOf({
      name: oddString,
      scopes: fc.oneof(anyValue, fc.array(fc.oneof(oddString, fc.constantFrom('keys:read', 'tokens:write')))),
      expiresAt: fc.oneof(oddString, anyValue),
    }),
    allowed: [400, 201],
  },
] as const;

describe.each(LIFECYCLE_CALLS)('$label with generated bodies', ({ label, method, path, body, allowed }) => {
  it('answers as documented, never 5xx, storing nothing it should not', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const text = serialize(b);
        const res = await call(method, path, { body: text, type: 'application/json' });
        if (res.status === 201) return (allowed as readonly number[]).includes(201);
        return judge(
          `${label} ${text.slice(0, 120)}`,
          res,
          Buffer.byteLength(text) > MAX_BODY ? [413] : allowed,
        );
      }),
      params,
    );
  });
});

describe.each(ENDPOINTS)('POST $path with generated bad bodies', ({ path, body, valid, allowed }) => {
  it('answers 400 with the JSON error envelope, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        body.filter((b) => !valid(b)),
        async (b) => {
          const text = serialize(b);
          const res = await postRaw(path, text);
          if (res.status === 400) {
            const code = (res.body as { code?: string }).code;
            if (code === 'validation_failed' && !Array.isArray((res.body as { details?: unknown }).details))
              return false;
          }
          // Generated huge strings can push a body past 64 KiB: then 413 is the documented answer.
          return judge(
            `${path} ${text.slice(0, 120)}`,
            res,
            Buffer.byteLength(text) > MAX_BODY ? [413] : allowed,
          );
        },
      ),
      params,
    );
  });

  it('answers 400 invalid_json to malformed, truncated and non-UTF-8 bodies', async () => {
    const malformed = fc.oneof(
      fc.string({ maxLength: 60 }).filter((s) => {
        try {
          JSON.parse(s);
          return false;
        } catch {
          return true;
        }
      }),
      // A valid document cut short.
      fc
        .tuple(body, fc.nat())
        .map(([b, n]) => {
          const text = serialize(b);
          return text.slice(0, text.length === 0 ? 0 : n % text.length);
        })
        .filter((s) => {
          try {
            JSON.parse(s);
            return false;
          } catch {
            return true;
          }
        }),
      fc.constantFrom(
        '',
        ' ',
        '{',
        '{"name":',
        "{'name':'x'}",
        '{"name":"x",}',
        'NaN',
        '{"name":"x"}garbage',
        '\ufeff{"name":"x"}',
      ),
    );
    await fc.assert(
      fc.asyncProperty(malformed, async (text) => {
        const res = await postRaw(path, text);
        if (Buffer.byteLength(text) > MAX_BODY) return judge(`${path} malformed, large`, res, [413]);
        return (
          judge(`${path} malformed ${JSON.stringify(text).slice(0, 80)}`, res, [400]) &&
          res.body.code === 'invalid_json'
        );
      }),
      params,
    );
  });

  it('answers 400 to a body whose bytes are not UTF-8, even around a valid-looking document', async () => {
    const badBytes = fc.constantFrom(
      [0xff],
      [0xfe, 0xff],
      [0xc3, 0x28],
      [0xe2, 0x82],
      [0xed, 0xa0, 0x80], // an encoded surrogate
      [0xf4, 0x90, 0x80, 0x80], // beyond U+10FFFF
      [0xc0, 0xaf], // overlong '/'
      [0x80],
    );
    await fc.assert(
      fc.asyncProperty(badBytes, fc.string({ minLength: 1, maxLength: 20 }), async (bytes, name) => {
        const field = path === '/consumer-api-key/create' ? 'name' : 'rateLimitId';
        const raw = Buffer.concat([
          Buffer.from(`{"${field}":"${JSON.stringify(name).slice(1, -1)}`),
          Buffer.from(bytes),
          Buffer.from(
            path === '/rate-limit/create'
              ? '","limit":5,"period":"day"}'
              : path === '/api-keys/apply-rate-limit'
                ? `","consumerApiKeyId":"${keyIds[1]}"}`
                : '"}',
          ),
        ]);
        const res = await postRaw(path, raw);
        return judge(`${path} bytes ${bytes.join(',')}`, res, [400]);
      }),
      { ...params, numRuns: Math.max(16, RUNS / 4) },
    );
  });

  it('answers 415 to every other content type, and 413 above 64 KiB', async () => {
    const types = [
      null,
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
      'application/jsonx',
      'application/json-patch+json',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'text/json',
      '*/*',
      'application/json, text/plain',
    ];
    for (const type of types) {
      const res = await postRaw(path, '{"name":"x"}', type);
      expect(judge(`${path} content-type ${type}`, res, [415])).toBe(true);
    }
    const gz = await call('POST', path, {
      body: gzipSync('{"name":"x"}'),
      type: 'application/json',
      headers: { 'content-encoding': 'gzip' },
    });
    expect(judge(`${path} gzip`, gz, [415])).toBe(true);
    for (const size of [MAX_BODY + 1, MAX_BODY * 4, 5 * 1024 * 1024]) {
      const big = JSON.stringify({ name: 'n'.repeat(size) });
      expect(judge(`${path} ${size} bytes`, await postRaw(path, big), [413])).toBe(true);
    }
    // Deep nesting right up to the size limit: parsed or refused, never a stack overflow.
    const depth = Math.floor((MAX_BODY - 20) / 2);
    const deepArray = '['.repeat(depth) + ']'.repeat(depth);
    expect(judge(`${path} depth ${depth}`, await postRaw(path, deepArray), [400])).toBe(true);
    const deepObject = '{"a":'.repeat(depth / 4) + '1' + '}'.repeat(depth / 4);
    expect(judge(`${path} object depth`, await postRaw(path, deepObject), [400])).toBe(true);
  });

  it('answers 401 to generated bodies without the root token, before reading them', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await postRaw(path, serialize(b), 'application/json', false);
        return judge(`${path} no token`, res, [401]);
      }),
      { ...params, numRuns: Math.max(16, RUNS / 4) },
    );
  });

  it('answers 405 to every other method', async () => {
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'] as const) {
      const res = await call(method, path, { body: '{}', type: 'application/json' });
      expect(judge(`${method} ${path}`, res, [405])).toBe(true);
    }
  });
});

describe('POST bodies that are well formed but name what does not exist or already exists', () => {
  it('409 for an existing plan id, 404 for unknown keys and plans, nothing written', async () => {
    for (const rateLimitId of planIds) {
      const res = await postRaw(
        '/rate-limit/create',
        JSON.stringify({ rateLimitId, limit: 1, period: 'second', description: 'takeover' }),
      );
      expect(judge('duplicate plan', res, [409])).toBe(true);
    }
    const pairs = [
      { consumerApiKeyId: keyIds[1], rateLimitId: 'no-such-plan' },
      { consumerApiKeyId: 'key_doesnotexist', rateLimitId: planIds[1] },
      { consumerApiKeyId: '..', rateLimitId: planIds[1] },
      { consumerApiKeyId: keyIds[1]!.toUpperCase(), rateLimitId: planIds[1] },
    ];
    for (const pair of pairs) {
      const res = await postRaw('/api-keys/apply-rate-limit', JSON.stringify(pair));
      expect(judge(`apply ${JSON.stringify(pair)}`, res, [404])).toBe(true);
    }
  });
});

// ---------------------------------------------------------------- identifiers in paths and queries

/** Path segments: percent-encoded, unicode, very long, dot segments, NUL, bad escapes. */
const oddId = fc.oneof(
  fc.string({ maxLength: 30 }).map(pct),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }).map(pct),
  fc.integer({ min: 129, max: 6_000 }).map((n) => 'k'.repeat(n)),
  fc.constantFrom(
    '..',
    '.',
    '%2e%2e',
    '%2E%2E',
    '..%2f..%2fetc%2fpasswd',
    '%2e%2e%2fcreate',
    '%00',
    'key%00x',
    '%',
    '%zz',
    '%c3%28',
    '%ed%a0%80',
    '%ff',
    'key_%F0%9F%94%91',
    '%252e%252e',
    '__proto__',
    'constructor',
    'prototype',
    'key_x;drop',
    "key_x'--",
    'key_x%20',
    '%20',
    'KEY_DOESNOTEXIST',
    'key_' + 'A'.repeat(124),
  ),
);

describe('identifiers in paths', () => {
  it('GET and DELETE /consumer-api-key/{odd id}: 404 key_not_found, no key deleted', async () => {
    await fc.assert(
      fc.asyncProperty(
        oddId.filter((id) => !keyIds.includes(id)),
        fc.constantFrom('GET', 'DELETE'),
        async (id, method) => {
          const res = await call(method, `/consumer-api-key/${id}`);
          // An id that decodes to something with a slash is a path of three segments: no such route.
          return judge(`${method} id ${id.slice(0, 60)}`, res, [404]);
        },
      ),
      params,
    );
  });

  it('paths around the management routes: 404 or 405, never a route by accident', async () => {
    const paths = [
      '/consumer-api-key/',
      '/consumer-api-key//',
      '/consumer-api-key/create/',
      '/consumer-api-key/x/y',
      '/Consumer-Api-Key',
      '/consumer-api-key%2fcreate',
      '/consumer-api-key/%2e%2e/rate-limit/create',
      '/rate-limit/',
      '/rate-limit/x/y',
      '/rate-limit/create/..',
      '/api-keys/apply-rate-limit/%2e',
      '/%2e%2e/consumer-api-key',
    ];
    for (const path of paths) {
      for (const method of ['GET', 'POST', 'DELETE'] as const) {
        const res = await call(method, path, { body: '{"name":"x"}', type: 'application/json' });
        expect(judge(`${method} ${path}`, res, [400, 404, 405])).toBe(true);
      }
    }
  });

  it('GET /consumer-api-key with bad limit and cursor: 400', async () => {
    const badQuery = fc.oneof(
      fc
        .oneof(
          oddString.map((s) => s.slice(0, 200)),
          oddNumber.map(String),
          fc.constantFrom(
            '0',
            '-1',
            '1001',
            '1.5',
            '1e4',
            '9007199254740993',
            'abc',
            '',
            '0x1000',
            '[]',
            '{}',
            'Infinity',
            'NaN',
          ),
        )
        .map((v) => `limit=${pct(v)}`),
      fc
        .oneof(
          oddString.map((s) => s.slice(0, 300)),
          fc.constantFrom('', 'abc', 'eyJzZXEiOi0xfQ', 'AAAA', '%', '-1'),
        )
        .map((v) => `cursor=${pct(v)}`),
      fc.constantFrom(
        'limit=1&limit=2',
        'cursor=a&cursor=b',
        '__proto__=1',
        '__proto__[limit]=1',
        'constructor=1',
        'extra=1',
        'limit[]=1',
        'limit[a]=1',
        'cursor[]=x',
        'limit=%ff',
        'limit=%',
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        // `limit` is coerced as a number (`1e3`, ` 7`, `0x10` read as 1000, 7, 16): those are in range, not bad.
        badQuery.filter((q) => {
          const m = /^limit=(.*)$/.exec(q);
          if (m === null) return true;
          let raw: string;
          try {
            raw = decodeURIComponent(m[1]!);
          } catch {
            return true;
          }
          const n = Number(raw);
          return raw.trim() === '' || !Number.isInteger(n) || n < 1 || n > 1000;
        }),
        async (query) => {
          const res = await call('GET', `/consumer-api-key?${query}`);
          return judge(`list ?${query.slice(0, 80)}`, res, [400]);
        },
      ),
      params,
    );
  });
});

// ---------------------------------------------------------------- afterwards

describe('afterwards', () => {
  it('no generated bad input was answered 5xx or outside what the OpenAPI document allows', () => {
    expect(tally.unexpected).toEqual([]);
    expect(tally.answers5xx).toBe(0);
    expect(tally.badInputsTried).toBeGreaterThan(1_000);
  });

  it('keys, bindings, ciphertexts, plans and usage are exactly as before', async () => {
    expect(await snapshot()).toEqual(before);
  });

  it('no prototype was polluted', () => {
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(
      Object.getOwnPropertyNames(Object.prototype).filter(
        (n) => n === 'polluted' || n === 'limit' || n === 'name',
      ),
    ).toEqual([]);
  });

  it('no secret or root token reached a log line, and nothing was logged as a failure', () => {
    const leaks = [...secrets, ROOT_TOKEN].filter((s) => logLines.some((line) => line.includes(s)));
    expect(leaks).toEqual([]);
    expect(logLines.filter((line) => /"level":(50|60)/.test(line))).toEqual([]);
  });
});
