import { isArrayIndex, parsePointer, resolvePointer } from '../../../src/plans/json-pointer.js';

describe('parsePointer (RFC 6901)', () => {
  it.each([
    ['', []],
    ['/', ['']],
    ['/usage/total_tokens', ['usage', 'total_tokens']],
    ['/a~1b/m~0n', ['a/b', 'm~n']],
    ['/~01', ['~1']], // ~0 is read after ~1: `~01` is `~` then `1`
    ['/choices/0', ['choices', '0']],
  ])('%j is %j', (text, tokens) => {
    expect(parsePointer(text)).toEqual(tokens);
  });

  it.each(['usage', '#/usage', '/a~2', '/a~', '/~'])('%j is not a pointer', (text) => {
    expect(parsePointer(text)).toBeUndefined();
  });
});

describe('resolvePointer', () => {
  const document = { usage: { total_tokens: 7 }, 'a/b': { 'm~n': 1 }, list: [10, 20], '': 3 };

  it.each([
    ['/usage/total_tokens', 7],
    ['/a~1b/m~0n', 1],
    ['/list/1', 20],
    ['/', 3],
    ['', document],
    ['/list/01', undefined],
    ['/list/-', undefined],
    ['/list/2', undefined],
    ['/usage/total_tokens/x', undefined],
    ['/toString', undefined], // only the document's own members
  ])('%j → %j', (text, value) => {
    expect(resolvePointer(document, parsePointer(text)!)).toEqual(value);
  });

  it('reads array indices as written, without leading zeros', () => {
    expect(['0', '7', '10'].every(isArrayIndex)).toBe(true);
    expect(['00', '-', '-1', '1.0', ''].some(isArrayIndex)).toBe(false);
  });
});
