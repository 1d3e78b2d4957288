/**
 * The official `openai` and `@anthropic-ai/sdk` clients call backends that speak their APIs (JSON and
 * streaming); a fetch handed to each client passes every chunk of the response to the client and,
 * beside it, to the meter, as the proxy will. The meter must find, to the unit, the usage the backend
 * reported and the client itself shows; and the reservation reads the request body the client sent.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { compileReservation, reservedUnits } from '../../src/metering/reservation.js';
import { openMeter } from '../../src/metering/open-meter.js';
import type { Reading } from '../../src/metering/reading.js';
import { SETTLE_MAX_DEFAULT } from '../../src/metering/reading.js';
import type { SettleRule } from '../../src/metering/settle-rule.js';
import { startAnthropicBackend, type AnthropicUsage } from '../helpers/anthropic-backend.js';
import type { ModelBackend } from '../helpers/model-backend.js';
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

const prompt = [{ role: 'user' as const, content: 'How are tokens counted?' }];

describe('the openai client against an OpenAI-compatible backend', () => {
  let backend: ModelBackend;
  let usage: OpenAiUsage;
  let readings: Promise<Reading>[];
  let client: OpenAI;
  beforeAll(async () => {
    backend = await startOpenAiBackend(() => usage);
  });
  afterAll(() => backend.close());
  beforeEach(() => {
    readings = [];
    client = new OpenAI({
      apiKey: 'sk-meter-test',
      baseURL: `${backend.url}/v1`,
      maxRetries: 0,
      fetch: meteredFetch({ preset: 'openai' }, readings),
    });
  });

  it('a JSON answer: the meter reads total_tokens, as the client does', async () => {
    usage = { prompt_tokens: 1234, completion_tokens: 567 };
    const completion = await client.chat.completions.create({ model: 'gpt-4o', messages: prompt });
    expect(completion.usage?.total_tokens).toBe(1801);
    expect(await Promise.all(readings)).toEqual([{ settled: true, units: 1801 }]);
  });

  it('a stream with include_usage: the meter reads the final usage chunk', async () => {
    usage = { prompt_tokens: 40_000, completion_tokens: 2_222 };
    const stream = await client.chat.completions.create({
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
    expect(text).toBe('Tokens are counted where they are spent.');
    expect(reported).toBe(42_222);
    expect(await Promise.all(readings)).toEqual([{ settled: true, units: 42_222 }]);
    const sent = JSON.parse(backend.requests.at(-1)!.body.toString('utf8')) as unknown;
    const reservation = compileReservation({ pointer: '/max_tokens', add: 1000, default: 4096 })!;
    expect(reservedUnits(sent, reservation, SETTLE_MAX_DEFAULT)).toBe(4000);
  });

  it('a stream without include_usage reports nothing: unsettled', async () => {
    usage = { prompt_tokens: 10, completion_tokens: 5 };
    const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: prompt, stream: true });
    for await (const chunk of stream) expect(chunk.usage).toBeUndefined();
    expect(await Promise.all(readings)).toEqual([{ settled: false, reason: 'not-reported' }]);
  });

  it('sends its key as Authorization: Bearer', async () => {
    usage = { prompt_tokens: 1, completion_tokens: 1 };
    await client.chat.completions.create({ model: 'gpt-4o', messages: prompt });
    expect(backend.requests.at(-1)!.headers.authorization).toBe('Bearer sk-meter-test');
  });
});

describe('the @anthropic-ai/sdk client against an Anthropic-compatible backend', () => {
  let backend: ModelBackend;
  let usage: AnthropicUsage;
  let readings: Promise<Reading>[];
  let client: Anthropic;
  beforeAll(async () => {
    backend = await startAnthropicBackend(() => usage);
  });
  afterAll(() => backend.close());
  beforeEach(() => {
    readings = [];
    client = new Anthropic({
      apiKey: 'sk-ant-meter-test',
      baseURL: backend.url,
      maxRetries: 0,
      fetch: meteredFetch({ preset: 'anthropic' }, readings),
    });
  });

  it('a JSON answer: input plus output tokens, as the client shows them', async () => {
    usage = { input_tokens: 2048, output_tokens: 512 };
    const message = await client.messages.create({
      model: 'claude-self-hosted',
      max_tokens: 1024,
      messages: prompt,
    });
    expect(message.usage.input_tokens + message.usage.output_tokens).toBe(2560);
    expect(await Promise.all(readings)).toEqual([{ settled: true, units: 2560 }]);
  });

  it('a stream: message_start’s input tokens and message_delta’s repeat of them counted once', async () => {
    usage = { input_tokens: 30_000, output_tokens: 777 };
    const stream = client.messages.stream({
      model: 'claude-self-hosted',
      max_tokens: 1024,
      messages: prompt,
    });
    const final = await stream.finalMessage();
    expect(final.content).toEqual([
      expect.objectContaining({ text: 'Tokens are counted where they are spent.' }),
    ]);
    expect(final.usage.input_tokens + final.usage.output_tokens).toBe(30_777);
    expect(await Promise.all(readings)).toEqual([{ settled: true, units: 30_777 }]);
    const sent = JSON.parse(backend.requests.at(-1)!.body.toString('utf8')) as unknown;
    const reservation = compileReservation({ pointer: '/max_tokens', add: 1000, default: 4096 })!;
    expect(reservedUnits(sent, reservation, SETTLE_MAX_DEFAULT)).toBe(2024);
  });

  // Written down for the guide: this client (1.14) sends an `apiKey` as `Authorization: Bearer`, not as
  // `x-api-key`, and an `authToken` the same way; Tollgate takes a consumer key from either header.
  it('sends its API key, and an auth token, as Authorization: Bearer and never as x-api-key', async () => {
    usage = { input_tokens: 1, output_tokens: 1 };
    await client.messages.create({ model: 'claude-self-hosted', max_tokens: 16, messages: prompt });
    const withKey = backend.requests.at(-1)!.headers;
    expect(withKey.authorization).toBe('Bearer sk-ant-meter-test');
    expect(withKey['x-api-key']).toBeUndefined();
    expect(withKey['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const withToken = new Anthropic({ authToken: 'sk-ant-token', baseURL: backend.url, maxRetries: 0 });
    await withToken.messages.create({ model: 'claude-self-hosted', max_tokens: 16, messages: prompt });
    const headers = backend.requests.at(-1)!.headers;
    expect(headers.authorization).toBe('Bearer sk-ant-token');
    expect(headers['x-api-key']).toBeUndefined();
  });
});
