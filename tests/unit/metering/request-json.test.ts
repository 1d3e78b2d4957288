import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { requestJson } from '../../../src/metering/request-json.js';
import { BODY_FORMS } from '../../helpers/body-forms.js';

const MAX = 1024 * 1024;

it('reads any JSON value alike in every encoding and content coding a backend reads', () => {
  fc.assert(
    fc.property(fc.jsonValue({ stringUnit: 'grapheme' }), fc.constantFrom(...BODY_FORMS), (value, form) => {
      const text = JSON.stringify(value);
      const read = requestJson(form.bytes(text), form.headers['content-encoding'], MAX);
      expect(read).toEqual({ json: JSON.parse(text) });
    }),
    { numRuns: 1_000 },
  );
});

it('reads NaN, Infinity and -Infinity outside strings as null, and leaves the words in strings', () => {
  const text =
    '{"model": "gpt-4o", "a": NaN, "b": [Infinity, -Infinity], "s": "NaN \\"Infinity\\" -Infinity"}';
  expect(requestJson(Buffer.from(text), undefined, MAX)).toEqual({
    json: { model: 'gpt-4o', a: null, b: [null, null], s: 'NaN "Infinity" -Infinity' },
  });
  // Words Python reads only alone: not JSON, to it either.
  for (const text of ['{"a": NaNa}', '{"a": Infinite}', '{"a": -NaN}', '{"a": nan}'])
    expect(requestJson(Buffer.from(text), undefined, MAX)).toEqual({ json: undefined });
});

it('reads a second byte order mark as part of the text, as Python does: not JSON', () => {
  expect(requestJson(Buffer.from('\ufeff\ufeff{}'), undefined, MAX)).toEqual({ json: undefined });
  expect(requestJson(Buffer.from('\ufeff{}'), undefined, MAX)).toEqual({ json: {} });
});

it('is too large when a coded body decodes past the bound, and exactly at it is read', () => {
  const text = JSON.stringify({ model: 'gpt-4o', pad: ' '.repeat(2_000) });
  const coded = gzipSync(Buffer.from(text));
  expect(coded.length).toBeLessThan(100);
  expect(requestJson(coded, 'gzip', text.length - 1)).toBe('too-large');
  expect(requestJson(coded, 'gzip', text.length)).toEqual({ json: JSON.parse(text) });
  // Kilobytes that decode to 64 MiB stop at the bound.
  const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));
  expect(requestJson(bomb, 'gzip', MAX)).toBe('too-large');
});

it('reads a body in a coding it does not know, or not in the coding it names, as it came', () => {
  const text = Buffer.from('{"model": "gpt-4o"}');
  // Python's servers ignore the field: a plain body that names a coding is plain to them.
  expect(requestJson(text, 'compress', MAX)).toEqual({ json: { model: 'gpt-4o' } });
  expect(requestJson(text, 'gzip', MAX)).toEqual({ json: { model: 'gpt-4o' } });
  expect(requestJson(text, 'br, zstd', MAX)).toEqual({ json: { model: 'gpt-4o' } });
  expect(requestJson(gzipSync(text).subarray(0, 10), 'gzip', MAX)).toEqual({ json: undefined });
  expect(requestJson(text, 'identity', MAX)).toEqual({ json: { model: 'gpt-4o' } });
  expect(requestJson(text, 'Identity, ', MAX)).toEqual({ json: { model: 'gpt-4o' } });
  // Three codings are undone, more are not (a field of thousands held the thread half a second).
  const thrice = gzipSync(gzipSync(gzipSync(text)));
  expect(requestJson(thrice, 'gzip, gzip, gzip', MAX)).toEqual({ json: { model: 'gpt-4o' } });
  expect(requestJson(gzipSync(thrice), 'gzip, gzip, gzip, gzip', MAX)).toEqual({ json: undefined });
  expect(requestJson(text, 'gzip, gzip, gzip, gzip', MAX)).toEqual({ json: { model: 'gpt-4o' } });
});
