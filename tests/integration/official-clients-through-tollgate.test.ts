/**
 * The guide's flow (docs/guides/usage-priced-apis.md), in both modes: the official `openai` and
 * `@anthropic-ai/sdk` clients call an OpenAI-compatible and an Anthropic-compatible backend through
 * Tollgate, JSON and streaming, with a consumer key on a plan of tokens a day and a month, a per-model
 * limit and a prepaid balance in tokens. Every limit, the balance and usage end charged what the
 * backends reported, to the token: with backends that answer plainly, and with backends that answer in
 * gzip, which the clients ask for (`Accept-Encoding: gzip, deflate`) as the hosted APIs give it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startAnthropicBackend, type AnthropicUsage } from '../helpers/anthropic-backend.js';
import { REPLY, type Coding, type ModelBackend } from '../helpers/model-backend.js';
import { startOpenAiBackend, type OpenAiUsage } from '../helpers/openai-backend.js';
import { waitFor } from '../helpers/poll.js';
import { HARNESS_LIMITERS } from '../helpers/harness-limiters.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

const prompt = [{ role: 'user' as const, content: 'How are tokens counted?' }];

const cases = Object.keys(HARNESS_LIMITERS).flatMap((limiter) =>
  (['plainly', 'in gzip'] as const).map((answered) => [limiter, answered] as const),
);

describe.each(cases)('the official clients through Tollgate, %s, answered %s', (limiter, answered) => {
  const coding: Coding | undefined = answered === 'in gzip' ? 'gzip' : undefined;
  let h: ProxyHarness;
  let openAiBackend: ModelBackend;
  let anthropicBackend: ModelBackend;
  let openAiUsage: OpenAiUsage = { prompt_tokens: 0, completion_tokens: 0 };
  let anthropicUsage: AnthropicUsage = { input_tokens: 0, output_tokens: 0 };
  const suffix = randomBytes(4).toString('hex');

  beforeAll(async () => {
    openAiBackend = await startOpenAiBackend(() => openAiUsage, REPLY, coding);
    anthropicBackend = await startAnthropicBackend(() => anthropicUsage, REPLY, coding);
    h = new ProxyHarness();
    // Counts in Redis expire by the wall clock: the limiter's windows must be the real ones.
    h.realTime = true;
    await h.start(await HARNESS_LIMITERS[limiter]!(h));
    for (const [routeId, pathPrefix, backend] of [
      [`openai-${suffix}`, '/v1/chat', openAiBackend],
      [`embeddings-${suffix}`, '/v1/embeddings', openAiBackend],
      [`responses-${suffix}`, '/v1/responses', openAiBackend],
      [`anthropic-${suffix}`, '/v1/messages', anthropicBackend],
    ] as const)
      expect(
        (await api('POST', '/tollgate/routes', { routeId, match: { pathPrefix }, upstreamUrl: backend.url }))
          .status,
      ).toBe(201);
  }, 60_000);
  afterAll(async () => {
    // Their paths belong to the next mode's routes.
    for (const routeId of [
      `openai-${suffix}`,
      `embeddings-${suffix}`,
      `responses-${suffix}`,
      `anthropic-${suffix}`,
    ])
      expect((await api('DELETE', `/tollgate/routes/${routeId}`)).status).toBe(200);
    await h.stop();
    await Promise.all([openAiBackend.close(), anthropicBackend.close()]);
  });

  const api: ProxyHarness['admin'] = (method, path, body) => h.admin(method, path, body);

  /** A plan in tokens, created, and a key on it holding a balance of `credits` tokens: the key's answer. */
  async function keyOnPlan(plan: Record<string, unknown>, name: string, credits: number) {
    const created = await api('POST', '/rate-limit/create', { ...plan, unit: 'tokens' });
    expect(created.status).toBe(201);
    const key = await api('POST', '/consumer-api-key/create', {
      name,
      rateLimitId: created.body.rateLimitId,
      credits: { remaining: credits },
    });
    expect(key.status).toBe(201);
    return key;
  }

  it('charges every limit, the balance and usage the tokens the backends reported, JSON and streaming', async () => {
    const reserve = { pointer: '/max_tokens', add: 1_000, default: 4_096 };
    const key = await keyOnPlan(
      {
        rateLimitId: `llm-${suffix}`,
        limits: [
          { name: 'tokens-per-day', limit: 200_000, period: 'day' },
          { name: 'tokens-per-month', limit: 2_000_000, period: 'month' },
          {
            name: 'gpt-4o',
            limit: 50_000,
            period: 'day',
            match: { body: { pointer: '/model', values: ['gpt-4o'] } },
          },
        ],
        costs: [
          { match: { routeIds: [`openai-${suffix}`] }, reserve, settle: { preset: 'openai' } },
          { match: { routeIds: [`anthropic-${suffix}`] }, reserve, settle: { preset: 'anthropic' } },
        ],
      },
      'llm caller',
      100_000,
    );
    const openai = new OpenAI({ apiKey: key.body.secret, baseURL: `${h.base}/v1`, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: key.body.secret, baseURL: h.base, maxRetries: 0 });

    openAiUsage = { prompt_tokens: 1_234, completion_tokens: 567 };
    const { data: completion, response } = await openai.chat.completions
      .create({ model: 'gpt-4o', messages: prompt, max_tokens: 800 })
      .withResponse();
    expect(completion.usage?.total_tokens).toBe(1_801);
    // The answer reached the client as the backend coded it.
    expect(response.headers.get('content-encoding')).toBe(coding ?? null);

    openAiUsage = { prompt_tokens: 100, completion_tokens: 23 };
    const stream = await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: prompt,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let streamedUsage = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      streamedUsage = chunk.usage?.total_tokens ?? streamedUsage;
    }
    expect(text).toBe(REPLY);
    expect(streamedUsage).toBe(123);

    anthropicUsage = { input_tokens: 2_048, output_tokens: 512 };
    const message = await anthropic.messages.create({
      model: 'claude-self-hosted',
      max_tokens: 1_024,
      messages: prompt,
    });
    expect(message.usage.input_tokens + message.usage.output_tokens).toBe(2_560);

    anthropicUsage = { input_tokens: 3_000, output_tokens: 777 };
    const final = await anthropic.messages
      .stream({ model: 'claude-self-hosted', max_tokens: 1_024, messages: prompt })
      .finalMessage();
    expect(final.usage.input_tokens + final.usage.output_tokens).toBe(3_777);

    // A cached prompt: input_tokens is only what was neither written to nor read from the cache.
    anthropicUsage = {
      input_tokens: 40,
      cache_creation_input_tokens: 1_500,
      cache_read_input_tokens: 6_000,
      output_tokens: 222,
    };
    const cached = await anthropic.messages
      .stream({ model: 'claude-self-hosted', max_tokens: 1_024, messages: prompt })
      .finalMessage();
    expect(cached.usage.cache_read_input_tokens).toBe(6_000);

    const reported = 1_801 + 123 + 2_560 + 3_777 + 7_762;
    // A client may have its last event before the response's last byte, when the request settles.
    const { value: detail } = await waitFor(
      async () => (await api('GET', `/consumer-api-key/${key.body.id}`)).body,
      (d) => d.credits.remaining === 100_000 - reported,
      { what: 'the last stream settled' },
    );
    expect(detail.usage.rateLimits.limits.map((l: { remaining: number }) => l.remaining)).toEqual([
      200_000 - reported,
      2_000_000 - reported,
      50_000 - 1_801,
    ]);
    expect(detail.credits.remaining).toBe(100_000 - reported);
    await h.flushed();
    expect(await h.usage(key.body.id)).toMatchObject({ requests: 5, cost: reported });
  });
  it('charges what the Responses API used, answered whole and streamed with an image', async () => {
    const key = await keyOnPlan(
      {
        rateLimitId: `responses-${suffix}`,
        limits: [{ name: 'tokens-per-day', limit: 100_000, period: 'day' }],
        costs: [
          {
            match: { routeIds: [`responses-${suffix}`] },
            reserve: { pointer: '/max_output_tokens', add: 1_000, default: 4_096 },
            settle: { preset: 'openai' },
          },
        ],
      },
      'responder',
      50_000,
    );
    const openai = new OpenAI({ apiKey: key.body.secret, baseURL: `${h.base}/v1`, maxRetries: 0 });

    openAiUsage = { prompt_tokens: 300, completion_tokens: 45 };
    const answer = await openai.responses.create({
      model: 'gpt-4.1',
      input: 'How are tokens counted?',
      max_output_tokens: 500,
    });
    expect(answer.output_text).toBe(REPLY);
    expect(answer.usage?.total_tokens).toBe(345);

    // With an image drawn: its last event, the whole response, is megabytes.
    openAiUsage = { prompt_tokens: 600, completion_tokens: 78 };
    const stream = await openai.responses.create({
      model: 'gpt-4.1',
      input: 'How are tokens counted?',
      max_output_tokens: 500,
      tools: [{ type: 'image_generation' }],
      stream: true,
    });
    let text = '';
    let streamedUsage = 0;
    let imageBytes = 0;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type !== 'response.completed') continue;
      streamedUsage = event.response.usage?.total_tokens ?? 0;
      for (const item of event.response.output)
        if (item.type === 'image_generation_call') imageBytes = Buffer.from(item.result!, 'base64').length;
    }
    expect(text).toBe(REPLY);
    expect(imageBytes).toBe(2 * 1024 * 1024);
    expect(streamedUsage).toBe(678);

    const { value: detail } = await waitFor(
      async () => (await api('GET', `/consumer-api-key/${key.body.id}`)).body,
      (d) => d.credits.remaining === 50_000 - 345 - 678,
      { what: 'the streamed response settled' },
    );
    expect(detail.usage.rateLimits.limits[0].remaining).toBe(100_000 - 345 - 678);
    await h.flushed();
    expect(await h.usage(key.body.id)).toMatchObject({ requests: 2, cost: 345 + 678 });
  });
  it('charges a batch of 2,048 embeddings, answered in base64 past 8 MiB, the tokens it used', async () => {
    const key = await keyOnPlan(
      {
        rateLimitId: `embed-${suffix}`,
        limits: [{ name: 'tokens-per-day', limit: 1_000_000, period: 'day' }],
        costs: [
          { match: { routeIds: [`embeddings-${suffix}`] }, cost: 10_000, settle: { preset: 'openai' } },
        ],
      },
      'embedder',
      100_000,
    );
    const openai = new OpenAI({ apiKey: key.body.secret, baseURL: `${h.base}/v1`, maxRetries: 0 });
    openAiUsage = { prompt_tokens: 8_000, completion_tokens: 0 };
    const input = Array.from({ length: 2_048 }, (_, i) => `passage ${i}`);
    const { data: answer, response } = await openai.embeddings
      .create({ model: 'text-embedding-3-small', input })
      .withResponse();
    expect(answer.data).toHaveLength(2_048);
    expect(answer.data[2_047]!.embedding).toHaveLength(1_536);
    expect(answer.usage.total_tokens).toBe(8_000);
    expect(response.headers.get('content-encoding')).toBe(coding ?? null);
    // The same batch asked for by hand: its answer, decoded, is past the 8 MiB a JSON answer was once read up to.
    const byHand = await fetch(`${h.base}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.body.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'text-embedding-3-small', input, encoding_format: 'base64' }),
    });
    expect((await byHand.arrayBuffer()).byteLength).toBeGreaterThan(8 * 2 ** 20);
    const { value: detail } = await waitFor(
      async () => (await api('GET', `/consumer-api-key/${key.body.id}`)).body,
      (d) => d.credits.remaining === 100_000 - 2 * 8_000,
      { what: 'both batches settled at their tokens' },
    );
    expect(detail.usage.rateLimits.limits[0].remaining).toBe(1_000_000 - 2 * 8_000);
  });
});
