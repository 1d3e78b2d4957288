/**
 * Usage-priced requests through the proxy (docs/decisions/0191), in both modes: an OpenAI-compatible
 * backend behind Tollgate reports the tokens each call used, in a JSON answer or the last chunk of a
 * stream; each request is reserved its cost entry's `cost` before it is forwarded and settled at what
 * its response reported when it ends, in its limits and its usage; one whose response reports nothing
 * keeps its reservation. A reservation read from the body (`max_tokens`), a per-model limit by the body,
 * 413 past BODY_MATCH_MAX_BYTES; each event of a stream reaches the client before the backend
 * sends the next; and a compressed answer that decodes to gigabytes goes on as it came, unsettled.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { brotliCompressSync, constants } from 'node:zlib';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { request } from 'undici';
import { startOpenAiBackend } from '../helpers/openai-backend.js';
import { ModelBackend, sendJson } from '../helpers/model-backend.js';
import { HARNESS_LIMITERS } from '../helpers/harness-limiters.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';
import { waitFor } from '../helpers/poll.js';

afterAll(closeDatabase);

/** Bodies are read up to 4 KiB to match and reserve on them. */
const BODY_MATCH_MAX_BYTES = '4096';

/** 20 prompt and 30 completion tokens: 50 a call. */
const USAGE = { prompt_tokens: 20, completion_tokens: 30 };
const RESERVED = 500;

describe.each(Object.keys(HARNESS_LIMITERS))('usage-priced requests through the proxy, %s', (limiter) => {
  let h: ProxyHarness;
  let backend: ModelBackend;
  // The file's modes share one database: a route id each.
  const routeId = `openai-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    backend = await startOpenAiBackend(() => USAGE);
    h = new ProxyHarness();
    // Counts in Redis expire by the wall clock: the limiter's windows must be the real ones.
    h.realTime = true;
    await h.start({ ...(await HARNESS_LIMITERS[limiter]!(h, { BODY_MATCH_MAX_BYTES })), captureLogs: true });
    const route = await api('POST', '/tollgate/routes', {
      routeId,
      match: { pathPrefix: '/v1/chat' },
      upstreamUrl: backend.url,
    });
    expect(route.status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    // Its path belongs to the next mode's route.
    expect((await api('DELETE', `/tollgate/routes/${routeId}`)).status).toBe(200);
    await h.stop();
    await backend.close();
  });

  const api: ProxyHarness['admin'] = (method, path, body) => h.admin(method, path, body);

  /** A key named `name` on a new plan of `plan`'s fields, both made through the management API. */
  async function keyOnPlan(
    name: string,
    plan: Record<string, unknown>,
  ): Promise<{ id: string; secret: string }> {
    const made = await api('POST', '/rate-limit/create', {
      rateLimitId: `${name}-${randomBytes(4).toString('hex')}`,
      ...plan,
    });
    expect(made.status).toBe(201);
    const key = await api('POST', '/consumer-api-key/create', { name, rateLimitId: made.body.rateLimitId });
    expect(key.status).toBe(201);
    return key.body;
  }

  /** A key on a plan of `limit` tokens a day, each chat call reserving RESERVED and settled by the openai preset. */
  const tokenKey = (limit: number, route = routeId) =>
    keyOnPlan('tokens', {
      limits: [{ name: 'tokens', limit, period: 'day' }],
      costs: [{ match: { routeIds: [route] }, cost: RESERVED, settle: { preset: 'openai' } }],
      unit: 'tokens',
    });

  const chat = (secret: string, body: Record<string, unknown> = {}) =>
    fetch(`${h.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], ...body }),
    });

  const tokensLeft = async (keyId: string) =>
    (await api('GET', `/consumer-api-key/${keyId}`)).body.usage.rateLimits.limits[0].remaining as number;
  /** The key's tokens left once they are `expected`: a settlement lands a moment after its response ends. */
  const tokensLeftBecome = async (keyId: string, expected: number) =>
    (
      await waitFor(
        () => tokensLeft(keyId),
        (left) => left === expected,
        { timeoutMs: 5_000, everyMs: 20 },
      )
    ).value;

  it('settles a JSON answer and a stream at the tokens they reported, in the limit and in usage', async () => {
    const key = await tokenKey(900);
    const answered = await chat(key.secret);
    expect(answered.status).toBe(200);
    // The reservation is what the headers can tell while the answer is on its way.
    expect(answered.headers.get('ratelimit-remaining') ?? answered.headers.get('ratelimit')).toMatch(/400/);
    expect(((await answered.json()) as { usage: { total_tokens: number } }).usage.total_tokens).toBe(50);
    expect(await tokensLeftBecome(key.id, 850)).toBe(850);

    // 850 left holds another reservation of 500: the first was settled at 50, not kept at 500.
    const streamed = await chat(key.secret, { stream: true, stream_options: { include_usage: true } });
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain('"total_tokens":50');
    expect(await tokensLeftBecome(key.id, 800)).toBe(800);

    await h.flushed();
    expect(await h.usage(key.id)).toMatchObject({ requests: 2, cost: 100 });
    expect((await api('GET', `/consumer-api-key/${key.id}`)).body.usage.unsettled).toBe(0);
    expect(await h.metric('tollgate_settled_units_total')).toMatch(/ 100$/);
  });

  it('counts a request written down while in flight once, settled at what it reported, when it ends', async () => {
    // Answers 70 tokens once the test lets it: until then, Tollgate waits for the response's head.
    let answer: (() => void) | undefined;
    const holding = await ModelBackend.start((_request, _json, response) => {
      answer = () => sendJson(response, { usage: { total_tokens: 70 } });
    });
    const heldRoute = `held-${randomBytes(4).toString('hex')}`;
    const route = { routeId: heldRoute, match: { pathPrefix: `/v1/${heldRoute}` }, upstreamUrl: holding.url };
    expect((await api('POST', '/tollgate/routes', route)).status).toBe(201);
    const written = () => h.metric('tollgate_requests_in_flight_written');
    try {
      const key = await tokenKey(900, heldRoute);
      const answered = fetch(`${h.base}/v1/${heldRoute}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
        body: '{}',
      });
      await waitFor(written, (line) => line.endsWith(' 1'), { what: 'the request written down' });
      // Written down while it is forwarded: the backend may not hold it yet.
      await waitFor(
        async () => answer !== undefined,
        (held) => held,
        { what: 'the backend holding the request' },
      );
      answer!();
      expect((await (await answered).json()) as unknown).toEqual({ usage: { total_tokens: 70 } });
      await waitFor(written, (line) => line.endsWith(' 0'), { what: 'its record taken back' });
      expect(await tokensLeftBecome(key.id, 830)).toBe(830);
      await h.flushed();
      expect(await h.usage(key.id)).toMatchObject({ requests: 1, cost: 70 });
      expect((await api('GET', `/consumer-api-key/${key.id}`)).body.usage.unsettled).toBe(0);
    } finally {
      expect((await api('DELETE', `/tollgate/routes/${heldRoute}`)).status).toBe(200);
      await holding.close();
    }
  });

  it('keeps the reservation of a response that reports nothing, and refuses what no longer fits', async () => {
    const key = await tokenKey(1_000);
    // A stream that was not asked to include its usage reports none.
    const streamed = await chat(key.secret, { stream: true });
    expect(streamed.status).toBe(200);
    await streamed.text();
    expect(await tokensLeftBecome(key.id, 500)).toBe(500);
    expect((await chat(key.secret)).status).toBe(200);
    expect(await tokensLeftBecome(key.id, 450)).toBe(450);
    const refused = await chat(key.secret);
    expect(refused.status).toBe(429);
    await h.flushed();
    expect(await h.usage(key.id)).toMatchObject({ requests: 3, cost: 550 });
    expect(await h.metric('tollgate_unsettled_requests_total')).toContain('reason="not-reported"} 1');
    // Usage counts the stream that reported nothing as unsettled (its cost, 500, is its reservation):
    // the settled answer and the refused request are not, in the totals, the path's and the day's.
    const detail = (await api('GET', `/consumer-api-key/${key.id}`)).body.usage;
    expect({ cost: detail.cost, unsettled: detail.unsettled, endpoints: detail.endpoints }).toEqual({
      cost: 550,
      unsettled: 1,
      endpoints: [expect.objectContaining({ endpoint: '/v1/chat/completions', requests: 3, unsettled: 1 })],
    });
    const day = new Date(h.clock()).toISOString().slice(0, 10);
    const overTime = await api(
      'GET',
      `/consumer-api-key/${key.id}/usage?granularity=day&from=${day}T00:00:00Z&to=${day}T23:59:59Z&groupBy=endpoint`,
    );
    expect(overTime.body.buckets).toEqual([
      expect.objectContaining({ requests: 3, cost: 550, unsettled: 1 }),
    ]);
    expect(overTime.body.series[0].buckets).toEqual([expect.objectContaining({ unsettled: 1 })]);
  });

  /**
   * A key of its own balance and a consumer's key, each on a plan of a 30-token limit and a 30-token
   * balance, with a reservation of 10 the backend answers with 50: each is overdrawn by 20.
   */
  async function overdrawn() {
    const plan = await api('POST', '/rate-limit/create', {
      rateLimitId: `overdrawn-${randomBytes(4).toString('hex')}`,
      limits: [{ name: 'tokens', limit: 30, period: 'day' }],
      costs: [{ match: { routeIds: [routeId] }, cost: 10, settle: { preset: 'openai' } }],
      unit: 'tokens',
    });
    expect(plan.status).toBe(201);
    const withBalance = { rateLimitId: plan.body.rateLimitId, credits: { remaining: 30, refill: null } };
    const consumer = await api('POST', '/tollgate/consumers', { name: 'overdrawn', ...withBalance });
    expect(consumer.status).toBe(201);
    const ofConsumer = await api('POST', '/consumer-api-key/create', {
      name: 'shared',
      consumerId: consumer.body.consumerId,
    });
    const own = await api('POST', '/consumer-api-key/create', { name: 'own', ...withBalance });
    const details = [
      async () => (await api('GET', `/tollgate/consumers/${consumer.body.consumerId}`)).body,
      async () => (await api('GET', `/consumer-api-key/${own.body.id}`)).body,
    ];
    const secrets = [ofConsumer.body.secret as string, own.body.secret as string];
    for (const [i, secret] of secrets.entries()) {
      const answered = await chat(secret);
      expect(answered.status).toBe(200);
      await answered.text();
      // Settled once the answer has ended: the balance no longer holds its 20 after the reservation.
      await waitFor(details[i]!, (d) => d.credits.remaining !== 20);
    }
    return { details, secrets };
  }

  it('refuses every request once settlement overdrew a limit and a balance, the limit showing 0 remaining', async () => {
    const { details, secrets } = await overdrawn();
    for (const secret of secrets) expect((await chat(secret)).status).toBe(429);
    for (const detail of details) {
      const { usage, credits } = await detail();
      expect(usage.rateLimits).toMatchObject({ limit: 30, remaining: 0 });
      expect(usage.rateLimits.limits[0]).toMatchObject({
        name: expect.stringMatching(/tokens$/),
        remaining: 0,
      });
      expect(credits.remaining).toBeLessThanOrEqual(0);
    }
  });

  it('shows a balance that settlement overdrew below 0 in the key and consumer details', async () => {
    const { details } = await overdrawn();
    for (const detail of details) expect((await detail()).credits.remaining).toBe(-20);
  });

  it('reserves max_tokens from the body, limits per model by the body, and refuses a body past the bound with 413', async () => {
    const key = await keyOnPlan('models', {
      limits: [
        { name: 'tokens', limit: 10_000, period: 'day' },
        {
          name: 'gpt-4o',
          limit: 600,
          period: 'day',
          match: { body: { pointer: '/model', values: ['gpt-4o'] } },
        },
      ],
      costs: [
        {
          match: { routeIds: [routeId] },
          reserve: { pointer: '/max_tokens', add: 100, default: 1_000 },
          settle: { preset: 'openai' },
        },
      ],
      unit: 'tokens',
    });
    const left = async () =>
      (
        (await api('GET', `/consumer-api-key/${key.id}`)).body.usage.rateLimits.limits as {
          remaining: number;
        }[]
      ).map((l) => l.remaining);

    // 400 + 100 reserved of both limits, settled at 50.
    expect((await chat(key.secret, { max_tokens: 400 })).status).toBe(200);
    expect(await left()).toEqual([9_950, 550]);
    // Another model is not the per-model limit's; without max_tokens it reserves the default.
    expect((await chat(key.secret, { model: 'gpt-4o-mini' })).status).toBe(200);
    expect(await left()).toEqual([9_900, 550]);
    // 550 left of gpt-4o's limit cannot hold 600 + 100.
    const refused = await chat(key.secret, { max_tokens: 600 });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ code: 'rate_limit_exceeded', name: 'gpt-4o' });

    const large = await chat(key.secret, { padding: 'x'.repeat(5_000) });
    expect(large.status).toBe(413);
    expect(await large.json()).toMatchObject({ code: 'body_too_large' });
    expect(await left()).toEqual([9_900, 550]);
    await h.flushed();
    expect(await h.usage(key.id)).toMatchObject({ requests: 4, cost: 100 });
  });

  it('counts a client that leaves while its body is read as gone (499), charging nothing and logging no error', async () => {
    const key = await keyOnPlan('left', {
      limits: [{ name: 'tokens', limit: 10_000, period: 'day' }],
      costs: [
        {
          match: { routeIds: [routeId] },
          reserve: { pointer: '/max_tokens', default: 1_000 },
          settle: { preset: 'openai' },
        },
      ],
      unit: 'tokens',
    });
    const forwarded = backend.requests.length;
    h.logLines.length = 0;
    const requestId = `left-${randomBytes(4).toString('hex')}`;
    // The client asks for `100 Continue`, which Tollgate sends as it starts reading the body to reserve
    // on it; the client then sends part of the body and leaves.
    const socket = connect(h.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: tollgate\r\nAuthorization: Bearer ${key.secret}\r\n` +
        `Content-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n` +
        `x-request-id: ${requestId}\r\n\r\n`,
    );
    await new Promise((resolve) => socket.once('data', resolve));
    socket.write('{"max_tokens":');
    socket.destroy();

    const { value: used } = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests > 0,
    );
    expect(used).toMatchObject({ requests: 1, successful: 0, failed: 1, cost: 0 });
    expect(await tokensLeft(key.id)).toBe(10_000);
    expect(backend.requests.length).toBe(forwarded);
    const lines = h.logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'proxied request', reqId: requestId, status: 499 }),
    );
  });

  /** Runs `use` with a route of its own to a backend answering with `handler`, gone after. */
  async function withBackend(
    handler: Parameters<typeof createServer>[1],
    use: (route: string) => Promise<void>,
  ): Promise<void> {
    const server: Server = createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const route = `own-${randomBytes(4).toString('hex')}`;
    const created = await api('POST', '/tollgate/routes', {
      routeId: route,
      match: { pathPrefix: `/v1/${route}` },
      upstreamUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    });
    expect(created.status).toBe(201);
    try {
      await use(route);
    } finally {
      expect((await api('DELETE', `/tollgate/routes/${route}`)).status).toBe(200);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  it('passes each event of a stream on before the backend sends the next, and settles from the last', async () => {
    // The backend holds its second event until the client has the first: were an event held back, the
    // stream would never go on (and the test would time out).
    let firstArrived!: () => void;
    const arrived = new Promise<void>((resolve) => (firstArrived = resolve));
    const backend: Parameters<typeof createServer>[1] = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"delta":{"content":"first"}}]}\n\n');
      void arrived.then(() => res.end('data: {"choices":[],"usage":{"total_tokens":7}}\n\ndata: [DONE]\n\n'));
    };
    await withBackend(backend, async (route) => {
      const key = await tokenKey(1_000, route);
      const res = await fetch(`${h.base}/v1/${route}`, {
        headers: { authorization: `Bearer ${key.secret}` },
      });
      const reader = res.body!.getReader();
      let text = '';
      while (!text.includes('first')) text += new TextDecoder().decode((await reader.read()).value);
      firstArrived();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
        text += new TextDecoder().decode(chunk.value);
      expect(text).toContain('"total_tokens":7');
      expect(await tokensLeftBecome(key.id, 993)).toBe(993);
    });
  });

  it('passes on an answer that decodes to far more than it weighs as it came, kept at its reservation', async () => {
    // 64 MiB of zeros in a few dozen bytes of br: the meter decodes an answer only to 256 times its
    // coded bytes past the first MiB, so it stops there and the answer is unsettled, too large.
    const params = { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_LGWIN]: 24 };
    const bomb = brotliCompressSync(Buffer.alloc(64 * 1024 * 1024), { params });
    const backend: Parameters<typeof createServer>[1] = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'br' });
      res.end(bomb);
    };
    await withBackend(backend, async (route) => {
      const key = await tokenKey(1_000, route);
      // undici's request decodes nothing: the client gets the bytes the backend sent.
      const answered = await request(`${h.base}/v1/${route}`, {
        headers: { authorization: `Bearer ${key.secret}` },
      });
      expect(answered.statusCode).toBe(200);
      expect(answered.headers['content-encoding']).toBe('br');
      expect(Buffer.from(await answered.body.arrayBuffer())).toEqual(bomb);
      expect(await tokensLeftBecome(key.id, 1_000 - RESERVED)).toBe(1_000 - RESERVED);
      expect(await h.metric('tollgate_unsettled_requests_total')).toContain('reason="too-large"} 1');
    });
  });
});
