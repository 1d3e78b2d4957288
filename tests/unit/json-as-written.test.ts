/** Reading JSON members in the order written, and writing them back (a key's metadata, "returned as given"). */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { jsonText, membersAsWritten, RawJson } from '../../src/management/json-as-written.js';

describe('membersAsWritten', () => {
  it('keeps the members of every object in the order written, integer-like names included', () => {
    const members = membersAsWritten('{ "b" : 1 , "2":"two", "a" :{"z":1,"1":[ {"9":0,"8":0} ]} }');
    expect([...members.keys()]).toEqual(['b', '2', 'a']);
    expect(members.get('a')).toBe('{"z":1,"1":[{"9":0,"8":0}]}');
  });

  it('reads every JSON document as JSON.parse does, and writes it as long as JSON.stringify would', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify({ value }, null, 1);
        const written = membersAsWritten(text).get('value')!;
        expect(JSON.parse(written)).toEqual(JSON.parse(JSON.stringify(value)));
        // Same bytes, perhaps in another member order: the 8 KiB limit measures the same text.
        expect(Buffer.byteLength(written)).toBe(Buffer.byteLength(JSON.stringify(value)));
      }),
    );
  });

  it('writes escapes and numbers as JSON.stringify does, and a repeated name where JSON.parse keeps it', () => {
    expect(membersAsWritten('{"s":"\\u00e9\\/\\n","n":[1.0,-0,1e2,1E-2]}').get('s')).toBe('"é/\\n"');
    expect(membersAsWritten('{"n":[1.0,-0,1e2,1E-2]}').get('n')).toBe('[1,0,100,0.01]');
    expect(membersAsWritten('{"m":{"a":1,"3":3,"a":{"x":2}}}').get('m')).toBe('{"a":{"x":2},"3":3}');
  });

  it('costs no stack for deep nesting', () => {
    const depth = 30_000;
    expect(membersAsWritten(`{"m":${'['.repeat(depth)}${']'.repeat(depth)}}`).get('m')).toHaveLength(
      2 * depth,
    );
  });
});

describe('jsonText', () => {
  it('writes what JSON.stringify writes, with RawJson parts as their text', () => {
    const body = {
      a: [1, 'x', null, { b: true }],
      c: undefined,
      d: new Date(0),
      raw: new RawJson('{"2":0,"1":0}'),
    };
    const { raw: _raw, ...rest } = body;
    expect(jsonText(rest)).toBe(JSON.stringify(rest));
    expect(jsonText(body)).toBe(
      '{"a":[1,"x",null,{"b":true}],"d":"1970-01-01T00:00:00.000Z","raw":{"2":0,"1":0}}',
    );
  });
});
