/**
 * @tollgate/client's middleware settles from the response the handler sent
 * (docs/guides/usage-priced-apis.md#verify): a real Express app and a real Fastify app, guarded with
 * `reserve` and `settle`, answer as a usage-priced API does (a JSON body in OpenAI's shape, a stream
 * whose last event carries the usage, a header), and the key is charged exactly what the handler
 * reported, counted once; a response that reports nothing keeps its reservation. In both modes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import Fastify from 'fastify';
import { tollgateExpress, tollgateFastify, type SettleAnswer } from '../../packages/client/src/index.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { waitFor } from '../helpers/poll.js';
import { listeningApps, type ListeningApps } from '../helpers/listening-apps.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

const DAY_LIMIT = 1_000;
const RESERVED = 100;

describe.each(HARNESS_MODES)('the client middleware settles from the response, $name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;
  let apps: ListeningApps | undefined;
  let expressUrl: string;
  let fastifyUrl: string;
  /** What each settle call answered, or why there was none, in order. */
  const settled: (SettleAnswer | Error)[] = [];

  beforeAll(async () => {
    h.realTime = true;
    stop = await mode.start(h);
    const connection = { baseUrl: h.base, token: h.rootToken };
    const onSettled = (outcome: SettleAnswer | Error) => void settled.push(outcome);

    // Priced by OpenAI's usage, in a JSON answer or the last event of a stream.
    const app = express();
    app.use(tollgateExpress({ ...connection, reserve: RESERVED, settle: { preset: 'openai' }, onSettled }));
    app.post('/v1/chat/completions', (req, res) => {
      if (req.query.stream === undefined) return void res.json({ usage: { total_tokens: 42 } });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"delta":{"content":"hi"}}]}\n\n');
      res.write('data: {"choices":[],"usage":{"prompt_tokens":7,"total_tokens":17}}\n\n');
      res.end('data: [DONE]\n\n');
    });
    app.post('/v1/nothing', (_req, res) => void res.json({ answer: 'no usage here' }));

    // Priced by a header the handler sets; the reservation read from the request.
    const fastify = Fastify();
    await fastify.register(tollgateFastify, {
      ...connection,
      reserve: (request) => Number(request.headers['x-most'] ?? 10),
      settle: { header: 'x-rows' },
      onSettled,
    });
    fastify.get('/rows', async (_request, reply) => reply.header('x-rows', '250').send({ rows: [] }));
    apps = await listeningApps(app, fastify);
    ({ expressUrl, fastifyUrl } = apps);
  }, 60_000);
  afterAll(async () => {
    await apps?.close();
    await stop?.();
  });

  const keyOnTokens = () => h.createKey({ limit: DAY_LIMIT, period: 'day' });

  /** Waits for `count` settle outcomes after the first `from`. */
  async function settledAfter(from: number, count: number): Promise<(SettleAnswer | Error)[]> {
    await waitFor(
      () => Promise.resolve(settled.length),
      (n) => n >= from + count,
      { what: `${count} settle outcomes` },
    );
    return settled.slice(from, from + count);
  }

  /** The day limit has room for exactly `units` more. */
  async function expectRoomFor(secret: string, units: number) {
    const verify = (cost: number) => h.admin('POST', '/tollgate/verify', { key: secret, cost });
    expect((await verify(units)).body).toMatchObject({ valid: true });
    expect((await verify(1)).body).toMatchObject({ valid: false, code: 'rate_limit_exceeded' });
  }

  it('Express: a JSON answer and a stream settle at the tokens they report, charged exactly and counted once', async () => {
    const key = await keyOnTokens();
    const from = settled.length;
    const call = (query = '') =>
      fetch(`${expressUrl}/v1/chat/completions${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}` },
      });
    const json = await call();
    expect(json.status).toBe(200);
    expect(await json.json()).toEqual({ usage: { total_tokens: 42 } });
    const stream = await call('?stream=1');
    expect(await stream.text()).toContain('[DONE]');

    const outcomes = await settledAfter(from, 2);
    expect(outcomes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ units: 42, charged: 42 - RESERVED }),
        expect.objectContaining({ units: 17, charged: 17 - RESERVED }),
      ]),
    );
    await expectRoomFor(key.secret, DAY_LIMIT - 42 - 17);
    await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 4 && u.cost === DAY_LIMIT,
      { what: 'two settled requests, the verify that filled the day and the one refused' },
    );
  });

  it('Fastify: a header settles the reservation read from the request', async () => {
    const key = await keyOnTokens();
    const from = settled.length;
    const res = await fetch(`${fastifyUrl}/rows`, { headers: { 'x-api-key': key.secret, 'x-most': '300' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-rows')).toBe('250');
    const [outcome] = await settledAfter(from, 1);
    expect(outcome).toMatchObject({ units: 250, charged: 250 - 300 });
    await expectRoomFor(key.secret, DAY_LIMIT - 250);
  });

  it('a response that reports nothing is not settled: it keeps its reservation', async () => {
    const key = await keyOnTokens();
    const from = settled.length;
    const res = await fetch(`${expressUrl}/v1/nothing`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.secret}` },
    });
    expect(res.status).toBe(200);
    const [outcome] = await settledAfter(from, 1);
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toMatch(/not-reported/);
    await expectRoomFor(key.secret, DAY_LIMIT - RESERVED);
  });
});
