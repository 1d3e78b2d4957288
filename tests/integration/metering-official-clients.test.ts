/**
 * The official `openai` and `@anthropic-ai/sdk` clients call backends that speak their APIs (JSON and
 * streaming); a fetch handed to each client passes every chunk of the response to the client and,
 * beside it, to the meter, as the proxy will. The meter must find, to the unit, the usage the backend
 * reported and the client itself shows; and the reservation reads the request body the client sent.
 */
import { Readable } from 'node:stream';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { compileReservation, reservedUnits } from '../../src/metering/reservation.js';
import { openMeter } from '../../src/metering/open-meter.js';
import type { Reading } from '../../src/metering/reading.js';
import { BODY_MATCH_MAX_BYTES_DEFAULT, readRequestBody } from '../../src/metering/request-body.js';
import { SETTLE_MAX_DEFAULT } from '../../src/metering/reading.js';
import type { SettleRule } from '../../src/metering/settle-rule.js';
import { startAnthropicBackend, type AnthropicUsage } from '../helpers/anthropic-backend.js';
import { REPLY, type ModelBackend } from '../helpers/model-backend.js';
import { startOpenAiBackend, type OpenAiUsage } from '../helpers/openai-backend.js';

/** A fetch that tees each response: the client reads one branch, the meter the other, chunk by chunk. */
function meteredFetch(rule: SettleRule, readings: Promise<Reading>[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const meter = openMeter(rule, Object.fromEntries(response.headers))!;
    const [toClient, toMeter] = response.body!.tee();
    readings.push(
      (async () => {
        for await (const chunk of toMeter) meter.write(chunk);
        return meter.end({ complete: true });
      })(),
    );
    return new Response(toClient, response);
  };
}

/** What `reserve: {pointer: "/max_tokens", add: 1000, default: 4096}` reads from the body last sent. */
async function reservedForLastRequest(backend: ModelBackend): Promise<number> {
  const sent = Readable.from([backend.requests.at(-1)!.body]);
  const body = await readRequestBody(sent, BODY_MATCH_MAX_BYTES_DEFAULT);
  const reservation = compileReservation({ pointer: '/max_tokens', add: 1000, default: 4096 })!;
  return reservedUnits(body.kind === 'read' ? body.json : undefined, reservation, SETTLE_MAX_DEFAULT);
}

const prompt = [{ role: 'user' as const, content: 'How are tokens counted?' }];

/** Starts a backend for the file, and before each test a client whose responses the meter reads too. */
function withBackend<Usage, Client>(
  start: (usage: () => Usage) => Promise<ModelBackend>,
  rule: SettleRule,
  connect: (url: string, fetch: typeof globalThis.fetch) => Client,
) {
  const context = { readings: [] } as unknown as {
    backend: ModelBackend;
    usage: Usage;
    readings: Promise<Reading>[];
    client: Client;
  };
  beforeAll(async () => {
    context.backend = await start(() => context.usage);
  });
  afterAll(() => context.backend.close());
  beforeEach(() => {
    context.readings = [];
    context.client = connect(context.backend.url, meteredFetch(rule, context.readings));
  });
  return context;
}

describe('the openai client against an OpenAI-compatible backend', () => {
  const the = withBackend<OpenAiUsage, OpenAI>(
    startOpenAiBackend,
    { preset: 'openai' },
    (url, fetch) => new OpenAI({ apiKey: 'sk-meter-test', baseURL: `${url}/v1`, maxRetries: 0, fetch }),
  );

  it('a JSON answer: the meter reads total_tokens, as the client does', async () => {
    the.usage = { prompt_tokens: 1234, completion_tokens: 567 };
    const completion = await the.client.chat.completions.create({ model: 'gpt-4o', messages: prompt });
    expect(completion.usage?.total_tokens).toBe(1801);
    expect(await Promise.all(the.readings)).toEqual([{ settled: true, units: 1801 }]);
  });

  it('a stream with include_usage: the meter reads the final usage chunk', async () => {
    the.usage = { prompt_tokens: 40_000, completion_tokens: 2_222 };
    const stream = await the.client.chat.completions.create({
      model: 'gpt-4o',
      messages: prompt,
      max_tokens: 3000,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let reported: number | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      reported = chunk.usage?.total_tokens ?? reported;
    }
    expect(text).toBe(REPLY);
    expect(reported).toBe(42_222);
    expect(await Promise.all(the.readings)).toEqual([{ settled: true, units: 42_222 }]);
    expect(await reservedForLastRequest(the.backend)).toBe(4000);
  });

  it('a stream without include_usage reports nothing: unsettled', async () => {
    the.usage = { prompt_tokens: 10, completion_tokens: 5 };
    const stream = await the.client.chat.completions.create({
      model: 'gpt-4o',
      messages: prompt,
      stream: true,
    });
    for await (const chunk of stream) expect(chunk.usage).toBeUndefined();
    expect(await Promise.all(the.readings)).toEqual([{ settled: false, reason: 'not-reported' }]);
  });

  it('sends its key as Authorization: Bearer', async () => {
    the.usage = { prompt_tokens: 1, completion_tokens: 1 };
    await the.client.chat.completions.create({ model: 'gpt-4o', messages: prompt });
    expect(the.backend.requests.at(-1)!.headers.authorization).toBe('Bearer sk-meter-test');
  });
});

describe('the @anthropic-ai/sdk client against an Anthropic-compatible backend', () => {
  const the = withBackend<AnthropicUsage, Anthropic>(
    startAnthropicBackend,
    { preset: 'anthropic' },
    (url, fetch) => new Anthropic({ apiKey: 'sk-ant-meter-test', baseURL: url, maxRetries: 0, fetch }),
  );

  it('a JSON answer: input plus output tokens, as the client shows them', async () => {
    the.usage = { input_tokens: 2048, output_tokens: 512 };
    const message = await the.client.messages.create({
      model: 'claude-self-hosted',
      max_tokens: 1024,
      messages: prompt,
    });
    expect(message.usage.input_tokens + message.usage.output_tokens).toBe(2560);
    expect(await Promise.all(the.readings)).toEqual([{ settled: true, units: 2560 }]);
  });

  it('a stream: message_start’s input tokens and message_delta’s repeat of them counted once', async () => {
    the.usage = { input_tokens: 30_000, output_tokens: 777 };
    const stream = the.client.messages.stream({
      model: 'claude-self-hosted',
      max_tokens: 1024,
      messages: prompt,
    });
    const final = await stream.finalMessage();
    expect(final.content).toEqual([expect.objectContaining({ text: REPLY })]);
    expect(final.usage.input_tokens + final.usage.output_tokens).toBe(30_777);
    expect(await Promise.all(the.readings)).toEqual([{ settled: true, units: 30_777 }]);
    expect(await reservedForLastRequest(the.backend)).toBe(2024);
  });

  // Written down for the guide: this client (1.14) sends an `apiKey` as `Authorization: Bearer`, not as
  // `x-api-key`, and an `authToken` the same way; Tollgate takes a consumer key from either header.
  it('sends its API key, and an auth token, as Authorization: Bearer and never as x-api-key', async () => {
    the.usage = { input_tokens: 1, output_tokens: 1 };
    await the.client.messages.create({ model: 'claude-self-hosted', max_tokens: 16, messages: prompt });
    const withKey = the.backend.requests.at(-1)!.headers;
    expect(withKey.authorization).toBe('Bearer sk-ant-meter-test');
    expect(withKey['x-api-key']).toBeUndefined();
    expect(withKey['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const withToken = new Anthropic({ authToken: 'sk-ant-token', baseURL: the.backend.url, maxRetries: 0 });
    await withToken.messages.create({ model: 'claude-self-hosted', max_tokens: 16, messages: prompt });
    const headers = the.backend.requests.at(-1)!.headers;
    expect(headers.authorization).toBe('Bearer sk-ant-token');
    expect(headers['x-api-key']).toBeUndefined();
  });
});
