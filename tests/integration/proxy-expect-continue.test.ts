/**
 * `Expect: 100-continue` on a request whose body decides (a reservation from `max_tokens`), in both
 * modes: the client holds its body back until Tollgate asks for it, Tollgate must read the body to
 * decide, so it sends the 100 once the key is known and the declared size fits, then decides and
 * forwards; a body declared past BODY_MATCH_MAX_BYTES gets its 413 without a 100, so it is never
 * uploaded. (Before, the proxy sent the 100 only after deciding, and the two waited on each other
 * until the client gave up waiting.)
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startOpenAiBackend } from '../helpers/openai-backend.js';
import type { ModelBackend } from '../helpers/model-backend.js';
import { HARNESS_LIMITERS } from '../helpers/harness-limiters.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

/** What a client waiting for a 100 saw: whether it was asked for its body, and the final answer. */
interface Exchange {
  continued: boolean;
  status: number;
  body: string;
}

/**
 * POSTs `body` with `Expect: 100-continue`, sending it only when the 100 comes (as curl and Node's
 * client do, without curl's one-second give-up): a proxy that never sends the 100 leaves this waiting.
 */
function postExpectingContinue(url: string, secret: string, body: string, declared = body.length) {
  return new Promise<Exchange>((resolve, reject) => {
    let continued = false;
    const req = request(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${secret}`,
        'content-type': 'application/json',
        'content-length': String(declared),
        expect: '100-continue',
      },
    });
    req.on('continue', () => {
      continued = true;
      req.end(body);
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ continued, status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

describe.each(Object.keys(HARNESS_LIMITERS))('Expect: 100-continue on a body that decides, %s', (limiter) => {
  let h: ProxyHarness;
  let backend: ModelBackend;
  const routeId = `continue-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    backend = await startOpenAiBackend(() => ({ prompt_tokens: 20, completion_tokens: 30 }));
    h = new ProxyHarness();
    h.realTime = true;
    await h.start(await HARNESS_LIMITERS[limiter]!(h, { BODY_MATCH_MAX_BYTES: '4096' }));
    const route = await h.admin('POST', '/tollgate/routes', {
      routeId,
      match: { pathPrefix: '/v1/chat' },
      upstreamUrl: backend.url,
    });
    expect(route.status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    expect((await h.admin('DELETE', `/tollgate/routes/${routeId}`)).status).toBe(200);
    await h.stop();
    await backend.close();
  });

  it('asks for the body it must read, then decides and forwards; a body declared too large is refused before it is sent', async () => {
    const plan = await h.admin('POST', '/rate-limit/create', {
      rateLimitId: `continue-${randomBytes(4).toString('hex')}`,
      limits: [{ name: 'tokens', limit: 10_000, period: 'day' }],
      costs: [
        {
          match: { routeIds: [routeId] },
          reserve: { pointer: '/max_tokens', add: 100, default: 1_000 },
          settle: { preset: 'openai' },
        },
      ],
      unit: 'tokens',
    });
    expect(plan.status).toBe(201);
    const key = await h.admin('POST', '/consumer-api-key/create', {
      name: 'waits',
      rateLimitId: plan.body.rateLimitId,
    });
    const body = JSON.stringify({
      model: 'gpt-4o',
      max_tokens: 200,
      messages: [{ role: 'user', content: 'hi' }],
    });

    const answered = await postExpectingContinue(`${h.base}/v1/chat/completions`, key.body.secret, body);
    expect(answered.continued).toBe(true);
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.body).usage.total_tokens).toBe(50);

    const tooLarge = await postExpectingContinue(`${h.base}/v1/chat/completions`, key.body.secret, '', 5_000);
    expect(tooLarge).toMatchObject({ continued: false, status: 413 });
    expect(JSON.parse(tooLarge.body).code).toBe('body_too_large');
  });
});
