import fc from 'fast-check';
import { JsonIntegerReader, PointerSet } from '../../../src/metering/json-integer-reader.js';
import { parsePointer, resolvePointer, type JsonPointer } from '../../../src/plans/json-pointer.js';
import { splitAt } from './split.js';
import { parses } from './parses.js';

/** Every pointer to a value in `value`, written as RFC 6901 writes them. */
function pointersIn(value: unknown, prefix = ''): string[] {
  const escape = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');
  if (typeof value !== 'object' || value === null) return [prefix];
  const children = Array.isArray(value)
    ? value.flatMap((child, index) => pointersIn(child, `${prefix}/${index}`))
    : Object.entries(value).flatMap(([key, child]) => pointersIn(child, `${prefix}/${escape(key)}`));
  return [prefix, ...children];
}

function read(text: string, pointers: readonly JsonPointer[], cuts: number[] = []) {
  const reader = new JsonIntegerReader(new PointerSet(pointers));
  for (const chunk of splitAt(Buffer.from(text), cuts)) reader.write(chunk);
  return { whole: reader.end(), found: reader.found };
}

/** A non-negative integer written without exponent (as JSON.stringify writes numbers), kept to 2^53 − 1. */
const unitOf = (value: unknown) =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && !String(value).includes('e')
    ? Math.min(value, Number.MAX_SAFE_INTEGER)
    : undefined;

it('finds at any pointers what JSON.parse finds there, whatever the document and however it is cut', () => {
  fc.assert(
    fc.property(
      fc.jsonValue().chain((value) => {
        const all = pointersIn(value);
        return fc.tuple(
          fc.constant(value),
          fc.subarray(all, { maxLength: Math.min(4, all.length) }),
          fc.array(fc.nat(), { maxLength: 8 }),
          fc.boolean(),
        );
      }),
      ([value, texts, cuts, pretty]) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        const pointers = texts.map((pointer) => parsePointer(pointer)!);
        const document = JSON.parse(text) as unknown; // what a reader of the whole text sees (-0 is 0)
        expect(read(text, pointers, cuts)).toEqual({
          whole: true,
          found: pointers.map((pointer) => unitOf(resolvePointer(document, pointer))),
        });
      },
    ),
    { numRuns: 300 },
  );
});

it('calls a text whole exactly when JSON.parse does, for texts a byte away from JSON', () => {
  const edits = fc.jsonValue().chain((value) => {
    const text = JSON.stringify(value);
    return fc.tuple(
      fc.constant(text),
      fc.nat(text.length),
      fc.constantFrom('delete', 'insert', 'replace'),
      fc.constantFrom(...'{}[]",:-+.eE0123456789tfnul \\\t\n\u0001x'),
    );
  });
  fc.assert(
    fc.property(edits, fc.array(fc.nat(), { maxLength: 4 }), ([text, at, edit, char], cuts) => {
      const changed =
        text.slice(0, at) + (edit === 'delete' ? '' : char) + text.slice(edit === 'insert' ? at : at + 1);
      expect(read(changed, [], cuts).whole).toBe(parses(changed));
    }),
    { numRuns: 2000 },
  );
});

it('calls a text whole exactly when JSON.parse does, for texts made of JSON’s pieces', () => {
  const piece = fc.constantFrom(
    ...['{', '}', '[', ']', '"', ',', ':', '-', '+', '.', 'e', 'E', '0', '1', '9', 'true', 'nul', 'null'],
    ...[' ', '\\', '\\u00e9', 'u', 'a', '\t', '\u0001'],
  );
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 10 }), fc.array(fc.nat(), { maxLength: 3 }), (pieces, cuts) => {
      expect(read(pieces.join(''), [], cuts).whole).toBe(parses(pieces.join('')));
    }),
    { numRuns: 5000 },
  );
});

it('is not whole when cut short, at any byte', () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.array(fc.jsonValue()), fc.dictionary(fc.string(), fc.jsonValue())).chain((value) => {
        const text = JSON.stringify(value);
        return fc.tuple(fc.constant(text), fc.nat(text.length - 1));
      }),
      ([text, length]) => {
        expect(read(text.slice(0, length), []).whole).toBe(false);
      },
    ),
  );
});

describe('integers', () => {
  const at = (text: string) => read(text, [parsePointer('/n')!]);

  it.each([
    ['{"n": 42}', 42],
    ['{"n": 0}', 0],
    ['{"n": -5}', undefined],
    ['{"n": 1.0}', undefined],
    ['{"n": 1e3}', undefined],
    ['{"n": "42"}', undefined],
    ['{"n": null}', undefined],
    ['{"n": {"m": 1}}', undefined],
    ['{"n": 1, "n": 2}', 2], // a repeated key: the last, as JSON.parse takes it
    ['{"n": 123456789012345678901234567890}', Number.MAX_SAFE_INTEGER],
  ])('%s → %j', (text, value) => {
    expect(at(text)).toEqual({ whole: true, found: [value] });
  });

  it('reads an integer that is the whole document', () => {
    expect(read(' 7 ', [[]])).toEqual({ whole: true, found: [7] });
  });

  it('knows the order of what it found, for the last one seen', () => {
    const reader = new JsonIntegerReader(new PointerSet([parsePointer('/b')!, parsePointer('/a')!]));
    reader.write(Buffer.from('{"a": 1, "b": 2}'));
    expect(reader.end()).toBe(true);
    expect(reader.foundAt[1]).toBeLessThan(reader.foundAt[0]!);
  });
});

describe('keys', () => {
  it('matches escaped keys, decoded', () => {
    const pointers = ['/a~1b/m~0n', '/usage/total_tokens', '/ключ'].map((text) => parsePointer(text)!);
    const text =
      '{"a/b": {"m~n": 1}, "\\u0075sage": {"total_\\u0074okens": 2}, "\\u043a\\u043b\\u044e\\u0447": 3}';
    expect(read(text, pointers)).toEqual({ whole: true, found: [1, 2, 3] });
  });

  it('does not take a longer key for a token it begins with', () => {
    expect(read(`{"usage${'x'.repeat(500)}": 1}`, [parsePointer('/usage')!]).found).toEqual([undefined]);
  });
});

it('does not read a document nested deeper than 256 levels', () => {
  expect(read('['.repeat(256) + ']'.repeat(256), []).whole).toBe(true);
  expect(read('['.repeat(257) + ']'.repeat(257), []).whole).toBe(false);
});

it('starts over for the next document after reset', () => {
  const reader = new JsonIntegerReader(new PointerSet([parsePointer('/n')!]));
  reader.write(Buffer.from('{"n": 3}'));
  expect(reader.end()).toBe(true);
  reader.reset();
  reader.write(Buffer.from('{"m": 3}'));
  expect(reader.end()).toBe(true);
  expect(reader.found).toEqual([undefined]);
});
