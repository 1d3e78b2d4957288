import { brotliCompressSync, constants, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import fc from 'fast-check';
import { decodedMeter } from '../../../src/metering/decoding-meter.js';
import { METER_BOUNDS_DEFAULT } from '../../../src/metering/meter-bounds.js';
import { openMeter } from '../../../src/metering/open-meter.js';
import type { Reading } from '../../../src/metering/reading.js';
import type { SettleRule } from '../../../src/metering/settle-rule.js';
import type { UnitMeter } from '../../../src/metering/unit-meter.js';
import { splitAt } from './split.js';

const ENCODE: Record<string, (bytes: Buffer) => Buffer> = {
  gzip: (bytes) => gzipSync(bytes),
  'x-gzip': (bytes) => gzipSync(bytes),
  deflate: (bytes) => deflateSync(bytes),
  br: (bytes) => brotliCompressSync(bytes),
  zstd: (bytes) => zstdCompressSync(bytes),
};

/** What the meter of `rule` reads from `body` sent with these headers, in chunks cut at `cuts`. */
function read(
  rule: SettleRule,
  headers: Record<string, string>,
  body: Uint8Array,
  { cuts = [] as number[], complete = true, bounds = METER_BOUNDS_DEFAULT } = {},
): Reading {
  const meter = decodedMeter(openMeter(rule, headers, bounds)!, headers['content-encoding']);
  for (const chunk of splitAt(body, cuts)) meter.write(chunk);
  return meter.end({ complete });
}

const JSON_ANSWER = '{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}';
const json = (encoding: string) => ({ 'content-type': 'application/json', 'content-encoding': encoding });
const STREAM = [
  'data: {"choices":[{"delta":{"content":"Tokens "}}],"usage":null}\n\n',
  'data: {"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":2,"total_tokens":42}}\n\n',
  'data: [DONE]\n\n',
].join('');

describe.each(Object.keys(ENCODE))('a body in %s', (encoding) => {
  const encode = ENCODE[encoding]!;

  it('is read decoded, however the coded bytes are cut', () => {
    const coded = encode(Buffer.from(JSON_ANSWER));
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 12 }), (cuts) => {
        expect(read({ preset: 'openai' }, json(encoding), coded, { cuts })).toEqual({
          settled: true,
          units: 12,
        });
      }),
    );
  });

  it('is read decoded when it is a stream of events', () => {
    const headers = { 'content-type': 'text/event-stream', 'content-encoding': encoding.toUpperCase() };
    const coded = encode(Buffer.from(STREAM));
    expect(read({ preset: 'openai' }, headers, coded, { cuts: [1, 7, 30] })).toEqual({
      settled: true,
      units: 42,
    });
  });

  it('cut short in its coding, or not in it at all, is malformed; cut short in transit, cut short', () => {
    const coded = encode(Buffer.from(JSON_ANSWER));
    const truncated = coded.subarray(0, coded.length - 4);
    expect(read({ preset: 'openai' }, json(encoding), truncated)).toEqual({
      settled: false,
      reason: 'malformed',
    });
    expect(read({ preset: 'openai' }, json(encoding), Buffer.from(JSON_ANSWER))).toEqual({
      settled: false,
      reason: 'malformed',
    });
    expect(read({ preset: 'openai' }, json(encoding), truncated, { complete: false })).toEqual({
      settled: false,
      reason: 'cut-short',
    });
  });
});

/** 64 MiB of zeros, coded: a decompression bomb (br's in a few dozen bytes, one chunk of a read). */
const BOMB_BYTES = 64 * 1024 * 1024;
const bombIn = (encoding: string): Buffer =>
  encoding === 'br'
    ? brotliCompressSync(Buffer.alloc(BOMB_BYTES), {
        params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_LGWIN]: 24 },
      })
    : ENCODE[encoding]!(Buffer.alloc(BOMB_BYTES));

/** What an answer of `coded` bytes may decode to: 256 times as much, past its first MiB. */
const decodedBound = (coded: number) => 1024 * 1024 + 256 * coded;

describe.each(Object.keys(ENCODE))('an answer in %s that decodes to far more than it weighs', (encoding) => {
  const bomb = bombIn(encoding);
  /** A meter behind the decoder that counts what it is given. */
  const counting = () => {
    const seen = { bytes: 0 };
    const meter: UnitMeter = {
      write: (chunk) => void (seen.bytes += chunk.length),
      end: () => ({ settled: true, units: 1 }),
    };
    return { seen, meter: decodedMeter(meter, encoding) };
  };

  it('is decoded no further than 256 times its coded bytes past the first MiB: too large', () => {
    for (const chunkBytes of [4096, bomb.length]) {
      const { seen, meter } = counting();
      let written = 0;
      const cuts = Array.from(
        { length: Math.floor(bomb.length / chunkBytes) },
        (_, i) => (i + 1) * chunkBytes,
      );
      for (const chunk of splitAt(bomb, cuts)) {
        meter.write(chunk);
        written += chunk.length;
        expect(seen.bytes).toBeLessThanOrEqual(decodedBound(written));
      }
      expect(meter.end({ complete: true })).toEqual({ settled: false, reason: 'too-large' });
      expect(seen.bytes).toBeLessThan(BOMB_BYTES);
    }
  });

  it('leaves the next answers in its coding read right', () => {
    const { meter } = counting();
    meter.write(bomb);
    meter.end({ complete: true });
    const coded = ENCODE[encoding]!(Buffer.from(JSON_ANSWER));
    expect(read({ preset: 'openai' }, json(encoding), coded)).toEqual({ settled: true, units: 12 });
    const stream = { 'content-type': 'text/event-stream', 'content-encoding': encoding };
    expect(read({ preset: 'openai' }, stream, bomb)).toEqual({ settled: false, reason: 'too-large' });
  });
});

it('undoes codings applied one over the other, the last applied first', () => {
  const coded = brotliCompressSync(gzipSync(Buffer.from(JSON_ANSWER)));
  expect(read({ preset: 'openai' }, json('gzip, br'), coded)).toEqual({ settled: true, units: 12 });
  expect(read({ preset: 'openai' }, json('br, gzip'), coded)).toEqual({
    settled: false,
    reason: 'malformed',
  });
});

it('reads identity as it is, and a coding it cannot undo as malformed', () => {
  expect(read({ preset: 'openai' }, json('identity'), Buffer.from(JSON_ANSWER))).toEqual({
    settled: true,
    units: 12,
  });
  expect(read({ preset: 'openai' }, json('compress'), Buffer.from(JSON_ANSWER))).toEqual({
    settled: false,
    reason: 'malformed',
  });
  expect(read({ preset: 'openai' }, json('gzip, compress'), gzipSync(JSON_ANSWER))).toEqual({
    settled: false,
    reason: 'malformed',
  });
});

it('undoes three codings, and reads an answer in more as one in a coding it cannot undo', () => {
  const thrice = gzipSync(gzipSync(gzipSync(JSON_ANSWER)));
  expect(read({ preset: 'openai' }, json('gzip, gzip, gzip'), thrice)).toEqual({ settled: true, units: 12 });
  expect(read({ preset: 'openai' }, json('gzip, gzip, gzip, gzip'), gzipSync(thrice))).toEqual({
    settled: false,
    reason: 'malformed',
  });
});

it('keeps the JSON bound on the decoded bytes: a small coded body that decodes past it is too large', () => {
  const padded = `{"pad":"${' '.repeat(64 * 1024)}","usage":{"total_tokens":5}}`;
  const bounds = { ...METER_BOUNDS_DEFAULT, documentMaxBytes: 16 * 1024 };
  const coded = gzipSync(padded);
  expect(coded.length).toBeLessThan(bounds.documentMaxBytes);
  expect(read({ preset: 'openai' }, json('gzip'), coded, { bounds })).toEqual({
    settled: false,
    reason: 'too-large',
  });
});

it('reads every answer right with decoders kept from answers before, failed, cut short or many at once', () => {
  const answer = (units: number) => `{"usage":{"total_tokens":${units}}}`;
  const open = (coding: string) => decodedMeter(openMeter({ preset: 'openai' }, json(coding))!, coding);
  // Forty answers decoded at once, more than the decoders kept idle, each in its own coding.
  const codings = Object.keys(ENCODE);
  const meters = Array.from({ length: 40 }, (_, i) => {
    const coding = codings[i % codings.length]!;
    return { meter: open(coding), coded: ENCODE[coding]!(Buffer.from(answer(i))) };
  });
  for (const { meter, coded } of meters) meter.write(coded.subarray(0, 5));
  for (const { meter, coded } of meters) meter.write(coded.subarray(5));
  expect(meters.map(({ meter }) => meter.end({ complete: true }))).toEqual(
    meters.map((_, i) => ({ settled: true, units: i })),
  );
  for (const coding of codings) {
    const coded = ENCODE[coding]!(Buffer.from(answer(99)));
    const failed = open(coding);
    failed.write(coded.subarray(0, coded.length - 4));
    expect(failed.end({ complete: true })).toEqual({ settled: false, reason: 'malformed' });
    const cut = open(coding);
    cut.write(coded.subarray(0, coded.length - 4));
    expect(cut.end({ complete: false })).toEqual({ settled: false, reason: 'cut-short' });
    expect(read({ preset: 'openai' }, json(coding), coded)).toEqual({ settled: true, units: 99 });
  }
});
