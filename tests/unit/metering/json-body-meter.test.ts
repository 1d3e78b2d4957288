import fc from 'fast-check';
import { METER_BOUNDS_DEFAULT } from '../../../src/metering/meter-bounds.js';
import { openMeter } from '../../../src/metering/open-meter.js';
import type { SettleRule } from '../../../src/metering/settle-rule.js';
import { splitAt } from './split.js';

const JSON_ANSWER = { 'content-type': 'application/json' };

function meterBody(
  rule: SettleRule,
  text: string | Buffer,
  cuts: number[] = [],
  bounds = METER_BOUNDS_DEFAULT,
) {
  const meter = openMeter(rule, JSON_ANSWER, bounds)!;
  for (const chunk of splitAt(typeof text === 'string' ? Buffer.from(text) : text, cuts)) meter.write(chunk);
  return meter.end({ complete: true });
}

it('sums the integers at 1–4 pointers, however the body is cut', () => {
  fc.assert(
    fc.property(
      fc.array(fc.nat(1e6), { minLength: 1, maxLength: 4 }),
      fc.array(fc.nat(), { maxLength: 8 }),
      (values, cuts) => {
        const body = JSON.stringify({
          id: 'x',
          usage: Object.fromEntries(values.map((v, i) => [`n${i}`, v])),
        });
        const pointers = values.map((_, i) => `/usage/n${i}`);
        const total = values.reduce((sum, v) => sum + v, 0);
        expect(meterBody({ json: pointers }, body, cuts)).toEqual({ settled: true, units: total });
      },
    ),
  );
});

describe('the presets on a plain JSON answer', () => {
  it('openai reads /usage/total_tokens', () => {
    const body = '{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}';
    expect(meterBody({ preset: 'openai' }, body)).toEqual({ settled: true, units: 12 });
  });

  it('anthropic adds input and output tokens, under usage or message.usage', () => {
    expect(meterBody({ preset: 'anthropic' }, '{"usage":{"input_tokens":9,"output_tokens":3}}')).toEqual({
      settled: true,
      units: 12,
    });
    const wrapped = '{"message":{"usage":{"input_tokens":9,"output_tokens":3}}}';
    expect(meterBody({ preset: 'anthropic' }, wrapped)).toEqual({ settled: true, units: 12 });
  });

  it('anthropic adds the prompt written to and read from the cache, when reported', () => {
    const cached =
      '{"usage":{"input_tokens":9,"cache_creation_input_tokens":200,"cache_read_input_tokens":5000,"output_tokens":3}}';
    expect(meterBody({ preset: 'anthropic' }, cached)).toEqual({ settled: true, units: 5_212 });
    // A server that caches nothing may send null.
    const uncached = '{"usage":{"input_tokens":9,"cache_creation_input_tokens":null,"output_tokens":3}}';
    expect(meterBody({ preset: 'anthropic' }, uncached)).toEqual({ settled: true, units: 12 });
    // The cache's figures alone are no usage report.
    const partial = '{"usage":{"cache_read_input_tokens":5000,"output_tokens":3}}';
    expect(meterBody({ preset: 'anthropic' }, partial)).toEqual({ settled: false, reason: 'not-reported' });
  });
});

it.each([
  ['{"usage": {"total_tokens": 12}', 'malformed'], // cut inside, yet ended: not JSON
  ['<html>502</html>', 'malformed'],
  ['', 'malformed'],
  ['{"usage": {"prompt_tokens": 12}}', 'not-reported'],
  ['{"usage": {"total_tokens": "12"}}', 'not-reported'],
  ['{"error": {"message": "overloaded"}}', 'not-reported'],
])('%s is unsettled: %s', (body, reason) => {
  expect(meterBody({ preset: 'openai' }, body)).toEqual({ settled: false, reason });
});

it('reads an answer after one UTF-8 byte order mark, however it is cut, as its clients read it', () => {
  const answer = '{"usage":{"total_tokens":21}}';
  for (const cut of [0, 1, 2, 3, 4]) {
    expect(meterBody({ preset: 'openai' }, `\ufeff${answer}`, [cut])).toEqual({ settled: true, units: 21 });
  }
  // One mark, at the start; and bytes that only begin one are read, as no client reads them either.
  const malformed = { settled: false, reason: 'malformed' };
  expect(meterBody({ preset: 'openai' }, `\ufeff\ufeff${answer}`)).toEqual(malformed);
  expect(meterBody({ preset: 'openai' }, ` \ufeff${answer}`)).toEqual(malformed);
  for (const start of [[0xef], [0xef, 0xbb]]) {
    const bytes = Buffer.concat([Buffer.from(start), Buffer.from(answer)]);
    for (const cut of [1, 2, 3]) expect(meterBody({ preset: 'openai' }, bytes, [cut])).toEqual(malformed);
  }
});

it('needs every pointer: a partial sum would charge too little', () => {
  expect(meterBody({ json: ['/a', '/b'] }, '{"a": 5}')).toEqual({ settled: false, reason: 'not-reported' });
});

it('stops reading past its byte bound, and is unsettled', () => {
  const bounds = { ...METER_BOUNDS_DEFAULT, documentMaxBytes: 40 };
  const body = '{"usage": {"total_tokens": 12}}';
  expect(meterBody({ preset: 'openai' }, body, [], bounds)).toEqual({ settled: true, units: 12 });
  const padded = `{"pad": "${'x'.repeat(40)}", "usage": {"total_tokens": 12}}`;
  expect(meterBody({ preset: 'openai' }, padded, [10], bounds)).toEqual({
    settled: false,
    reason: 'too-large',
  });
});

it('is unsettled when cut short, though what arrived was whole', () => {
  const meter = openMeter({ preset: 'openai' }, JSON_ANSWER)!;
  meter.write(Buffer.from('{"usage": {"total_tokens": 12}}'));
  expect(meter.end({ complete: false })).toEqual({ settled: false, reason: 'cut-short' });
});

describe('openMeter', () => {
  it('reads a text/event-stream, whatever its parameters and case, as events', () => {
    const meter = openMeter({ json: ['/n'] }, { 'content-type': ' Text/Event-Stream ; charset=utf-8' })!;
    meter.write(Buffer.from('data: {"n": 3}\n\ndata: {"n": 4}\n\n'));
    expect(meter.end({ complete: true })).toEqual({ settled: true, units: 4 });
  });

  it('reads any other body, or none said, as JSON', () => {
    const meter = openMeter({ json: ['/n'] }, {})!;
    meter.write(Buffer.from('{"n": 3}'));
    expect(meter.end({ complete: true })).toEqual({ settled: true, units: 3 });
  });

  it.each([[[]], [['/a', '/b', '/c', '/d', '/e']], [['a']], [['/a~2']]])(
    'opens no meter for json pointers %j',
    (pointers: string[]) => {
      expect(openMeter({ json: pointers }, JSON_ANSWER)).toBeUndefined();
    },
  );
});

it('never throws, whatever bytes arrive, as JSON or as events', () => {
  const contentTypes = fc.constantFrom('application/json', 'text/event-stream');
  fc.assert(
    fc.property(
      contentTypes,
      fc.array(
        fc.oneof(
          fc.uint8Array(),
          fc.string().map((text) => Buffer.from(text)),
        ),
      ),
      (contentType, chunks) => {
        const meter = openMeter({ preset: 'anthropic' }, { 'content-type': contentType })!;
        for (const chunk of chunks) meter.write(chunk);
        expect(meter.end({ complete: true })).toHaveProperty('settled');
      },
    ),
  );
});
