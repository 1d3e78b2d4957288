import fc from 'fast-check';
import { METER_BOUNDS_DEFAULT } from '../../../src/metering/meter-bounds.js';
import { openMeter } from '../../../src/metering/open-meter.js';
import type { Reading } from '../../../src/metering/reading.js';
import type { SettleRule } from '../../../src/metering/settle-rule.js';
import { splitAt } from './split.js';

const EVENT_STREAM = { 'content-type': 'text/event-stream; charset=utf-8' };

function meterStream(
  rule: SettleRule,
  text: string,
  cuts: number[] = [],
  bounds = METER_BOUNDS_DEFAULT,
): Reading {
  const meter = openMeter(rule, EVENT_STREAM, bounds)!;
  for (const chunk of splitAt(Buffer.from(text), cuts)) meter.write(chunk);
  return meter.end({ complete: true });
}

/** One event as a server may write it: its data's JSON over one or several `data:` lines. */
const anEvent = (usage: { a?: number; b?: number }) =>
  fc
    .record({
      name: fc.option(fc.constantFrom('message', 'delta', 'ping')),
      id: fc.option(fc.constantFrom('1', 'x y')),
      comment: fc.boolean(),
      lines: fc.boolean(), // the JSON pretty-printed over several data lines
      space: fc.boolean(), // `data: ` or `data:`
      noise: fc.constantFrom({}, { text: 'data: {"usage": 9}\n\n' }, { usage: null }, { choices: [] }),
    })
    .map(({ name, id, comment, lines, space, noise }) => {
      const json = JSON.stringify(
        { ...noise, usage: usage.a === undefined && usage.b === undefined ? null : usage },
        null,
        lines ? 1 : undefined,
      );
      return [
        ...(comment ? [': keep-alive'] : []),
        ...(name === null ? [] : [`event: ${name}`]),
        ...json.split('\n').map((line) => `data:${space ? ' ' : ''}${line}`),
        ...(id === null ? [] : [`id: ${id}`]),
      ];
    });

it('sums, per pointer, the last integer any event reported, whatever the line ends, lines and chunks', () => {
  const usage = fc.record({
    a: fc.option(fc.nat(1e6), { nil: undefined }),
    b: fc.option(fc.nat(1e6), { nil: undefined }),
  });
  fc.assert(
    fc.property(
      fc
        .array(usage, { maxLength: 6 })
        .chain((usages) =>
          fc.tuple(
            fc.constant(usages),
            fc.tuple(...usages.map(anEvent)),
            fc.constantFrom('\n', '\r\n', '\r'),
            fc.array(fc.nat(), { maxLength: 10 }),
            fc.boolean(),
          ),
        ),
      ([usages, events, newline, cuts, done]) => {
        const text =
          events.map((lines) => lines.join(newline) + newline + newline).join('') +
          (done ? `data: [DONE]${newline}${newline}` : '');
        const last = (field: 'a' | 'b') => usages.findLast((u) => u[field] !== undefined)?.[field];
        const [a, b] = [last('a'), last('b')];
        const expected: Reading =
          a === undefined || b === undefined
            ? { settled: false, reason: 'not-reported' }
            : { settled: true, units: a + b };
        expect(meterStream({ json: ['/usage/a', '/usage/b'] }, text, cuts)).toEqual(expected);
      },
    ),
    { numRuns: 500 },
  );
});

it('reads the OpenAI stream’s final usage chunk and ignores [DONE]', () => {
  const text =
    [
      'data: {"choices":[{"delta":{"content":"Hi"}}],"usage":null}',
      'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}',
      'data: [DONE]',
    ].join('\n\n') + '\n\n';
  expect(meterStream({ preset: 'openai' }, text)).toEqual({ settled: true, units: 7 });
});

it('reads the usage of the response a Responses API stream completes with', () => {
  const response = (status: string, usage: string) =>
    `{"id":"resp_1","object":"response","status":"${status}","usage":${usage}}`;
  const text =
    [
      `event: response.created\ndata: {"type":"response.created","response":${response('in_progress', 'null')}}`,
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Hi"}',
      `event: response.completed\ndata: {"type":"response.completed","response":${response(
        'completed',
        '{"input_tokens":3,"output_tokens":4,"total_tokens":7}',
      )}}`,
    ].join('\n\n') + '\n\n';
  expect(meterStream({ preset: 'openai' }, text)).toEqual({ settled: true, units: 7 });
  // Cut off by max_output_tokens, it ends with `response.incomplete`, its usage as complete.
  const incomplete = text.replaceAll('response.completed', 'response.incomplete');
  expect(meterStream({ preset: 'openai' }, incomplete)).toEqual({ settled: true, units: 7 });
});

it('counts Anthropic’s input tokens once, though message_delta repeats them', () => {
  const text =
    [
      'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":100,"output_tokens":1}}}',
      'event: ping\ndata: {"type": "ping"}',
      'event: message_delta\ndata: {"type":"message_delta","usage":{"input_tokens":100,"output_tokens":50}}',
      'event: message_stop\ndata: {"type":"message_stop"}',
    ].join('\n\n') + '\n\n';
  expect(meterStream({ preset: 'anthropic' }, text)).toEqual({ settled: true, units: 150 });
  // Older servers leave input_tokens out of message_delta: message_start's still counts.
  const older = text.replace(
    '"usage":{"input_tokens":100,"output_tokens":50}',
    '"usage":{"output_tokens":50}',
  );
  expect(meterStream({ preset: 'anthropic' }, older)).toEqual({ settled: true, units: 150 });
});

it('counts Anthropic’s cached prompt once, from message_start or the cumulative message_delta', () => {
  const usage = '"input_tokens":100,"cache_creation_input_tokens":2000,"cache_read_input_tokens":30000';
  const events = (deltaUsage: string) =>
    [
      `event: message_start\ndata: {"type":"message_start","message":{"usage":{${usage},"output_tokens":1}}}`,
      `event: message_delta\ndata: {"type":"message_delta","usage":{${deltaUsage}}}`,
      'event: message_stop\ndata: {"type":"message_stop"}',
    ].join('\n\n') + '\n\n';
  const expected = { settled: true, units: 100 + 2_000 + 30_000 + 50 };
  expect(meterStream({ preset: 'anthropic' }, events(`${usage},"output_tokens":50`))).toEqual(expected);
  expect(meterStream({ preset: 'anthropic' }, events('"output_tokens":50'))).toEqual(expected);
});

it('drops an event the stream ends inside (no blank line after it), as a browser does', () => {
  expect(meterStream({ json: ['/n'] }, 'data: {"n": 5}\n')).toEqual({
    settled: false,
    reason: 'not-reported',
  });
  expect(meterStream({ json: ['/n'] }, 'data: {"n": 5}\n\ndata: {"n": 6}')).toEqual({
    settled: true,
    units: 5,
  });
});

it('joins data lines with a line feed, and reads a field named data only', () => {
  expect(meterStream({ json: ['/n'] }, 'data: {"n":\ndata: 5}\n\n')).toEqual({ settled: true, units: 5 });
  // 1, a line feed, 2: two values, not JSON (joined with nothing it would read 12).
  expect(meterStream({ json: ['/n'] }, 'data: {"n": 1\ndata: 2}\n\n')).toEqual({
    settled: false,
    reason: 'not-reported',
  });
  expect(meterStream({ json: ['/n'] }, 'datum: {"n": 5}\n\n')).toEqual({
    settled: false,
    reason: 'not-reported',
  });
  expect(meterStream({ json: ['/n'] }, 'Data: {"n": 5}\n\n')).toEqual({
    settled: false,
    reason: 'not-reported',
  });
  expect(meterStream({ json: ['/n'] }, 'data\ndata: {"n": 5}\n\n')).toEqual({ settled: true, units: 5 });
});

it('skips a byte-order mark before the first field, however it is cut', () => {
  const text = '\ufeffdata: {"n": 5}\n\n';
  for (const cut of [1, 2, 3, 4]) {
    expect(meterStream({ json: ['/n'] }, text, [cut])).toEqual({ settled: true, units: 5 });
  }
});

it('reads bytes that only begin a byte-order mark as part of the first field name, as a browser does', () => {
  const meter = openMeter({ json: ['/n'] }, EVENT_STREAM)!;
  meter.write(Uint8Array.of(0xef));
  meter.write(Buffer.from('data: {"n": 5}\n\n'));
  expect(meter.end({ complete: true })).toEqual({ settled: false, reason: 'not-reported' });
});

it('reads past an event of megabytes, as a Responses API stream ends with its whole response', () => {
  const image = Buffer.alloc(3 * 1024 * 1024, 7).toString('base64');
  const response = `{"status":"completed","output":[{"type":"image_generation_call","result":"${image}"}],"usage":{"input_tokens":50,"output_tokens":1056,"total_tokens":1106}}`;
  const text =
    [
      `event: response.image_generation_call.partial_image\ndata: {"partial_image_b64":"${image}"}`,
      `event: response.completed\ndata: {"type":"response.completed","response":${response}}`,
    ].join('\n\n') + '\n\n';
  expect(meterStream({ preset: 'openai' }, text, [100, 5_000_000])).toEqual({ settled: true, units: 1_106 });
});

it('is unsettled when cut short, or when one event carries more data than the bound', () => {
  const meter = openMeter({ preset: 'openai' }, EVENT_STREAM)!;
  meter.write(Buffer.from('data: {"usage":{"total_tokens":7}}\n\n'));
  expect(meter.end({ complete: false })).toEqual({ settled: false, reason: 'cut-short' });
  const bounds = { ...METER_BOUNDS_DEFAULT, documentMaxBytes: 64 };
  const big = `data: {"text": "${'x'.repeat(64)}"}\n\ndata: {"usage":{"total_tokens":7}}\n\n`;
  expect(meterStream({ preset: 'openai' }, big, [], bounds)).toEqual({ settled: false, reason: 'too-large' });
  const small = `data: {"text": "${'x'.repeat(40)}"}\n\ndata: {"usage":{"total_tokens":7}}\n\n`;
  expect(meterStream({ preset: 'openai' }, small, [], bounds)).toEqual({ settled: true, units: 7 });
});

it('caps the units at settleMax', () => {
  const text = 'data: {"usage":{"total_tokens":123456789}}\n\n';
  expect(meterStream({ preset: 'openai' }, text)).toEqual({ settled: true, units: 10_000_000 });
});
