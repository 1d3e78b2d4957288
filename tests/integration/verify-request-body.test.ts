/**
 * Verify's `body` (docs/decisions/0242): the request's JSON body, as the server asking parsed it,
 * decides a plan's per-model limits (`match.body`) and its `reserve` as the proxy's own request body
 * would; without it such a limit matches nothing and `reserve` takes its default. @tollgate/client's
 * middleware sends what its `body` option picks from the body the framework parsed: a real Express app
 * (its body parser mounted first) and a real Fastify app (deciding in preHandler), in both modes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import Fastify from 'fastify';
import { tollgateExpress, tollgateFastify } from '../../packages/client/src/index.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { perModelKey, perModelRemaining } from '../helpers/per-model-key.js';
import { listeningApps, type ListeningApps } from '../helpers/listening-apps.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

const LIMIT = 1_000;

describe.each(HARNESS_MODES)('a request body decided on through verify, $name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;
  let apps: ListeningApps | undefined;
  let expressUrl: string;
  let fastifyUrl: string;

  beforeAll(async () => {
    h.realTime = true;
    stop = await mode.start(h);
    const connection = { baseUrl: h.base, token: h.rootToken };
    const picked = (request: { body?: unknown }) => request.body;

    const app = express();
    app.use(express.json());
    app.use(tollgateExpress({ ...connection, body: picked }));
    app.post(
      '/v1/chat/completions',
      (req, res) => void res.json({ model: (req.body as { model: string }).model }),
    );

    const fastify = Fastify();
    await fastify.register(tollgateFastify, { ...connection, body: picked });
    fastify.post('/v1/chat/completions', async (request) => ({
      model: (request.body as { model: string }).model,
    }));
    apps = await listeningApps(app, fastify);
    ({ expressUrl, fastifyUrl } = apps);
  }, 60_000);
  afterAll(async () => {
    await apps?.close();
    await stop?.();
  });

  /** Each call reserving max_tokens (default 300), settled by the openai preset. */
  const modelKey = () =>
    perModelKey(h, LIMIT, [
      {
        match: { pathPrefix: '/v1' },
        reserve: { pointer: '/max_tokens', default: 300 },
        settle: { preset: 'openai' },
      },
    ]);
  const remaining = (id: string) => perModelRemaining(h, id);

  it("decides a per-model limit and a reservation on verify's body, and without it on neither", async () => {
    const key = await modelKey();
    const verify = (body?: unknown) =>
      h.admin('POST', '/tollgate/verify', {
        key: key.secret,
        method: 'POST',
        path: '/v1/chat/completions',
        ...(body !== undefined && { body }),
      });
    const first = await verify({ model: 'gpt-4o', max_tokens: 200, messages: [] });
    expect(first.body).toMatchObject({ valid: true, cost: 200 });
    expect(await remaining(key.id)).toBe(LIMIT - 200);
    // Another model, and no body: not the limit's; no max_tokens to read: the default.
    expect((await verify({ model: 'gpt-4o-mini', max_tokens: 900 })).body).toMatchObject({ cost: 900 });
    expect((await verify()).body).toMatchObject({ valid: true, cost: 300 });
    expect(await remaining(key.id)).toBe(LIMIT - 200);
    const over = await verify({ model: 'gpt-4o', max_tokens: 801 });
    expect(over.body).toMatchObject({ valid: false, code: 'rate_limit_exceeded' });
  });

  it('the middleware sends the body the framework parsed: Express and Fastify count gpt-4o calls against its limit', async () => {
    for (const url of [expressUrl, fastifyUrl]) {
      const key = await modelKey();
      const call = (body: unknown) =>
        fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'x-api-key': key.secret, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const answered = await call({ model: 'gpt-4o', max_tokens: 600 });
      expect([answered.status, await answered.json()]).toEqual([200, { model: 'gpt-4o' }]);
      expect(await remaining(key.id)).toBe(LIMIT - 600);
      expect((await call({ model: 'gpt-4o-mini', max_tokens: 600 })).status).toBe(200);
      const refused = await call({ model: 'gpt-4o', max_tokens: 600 });
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({ code: 'rate_limit_exceeded' });
    }
  });
});
