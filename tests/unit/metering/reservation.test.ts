import fc from 'fast-check';
import { bodyMatches, compileBodyMatch } from '../../../src/plans/body-match.js';
import { compileReservation, reservedUnits } from '../../../src/metering/reservation.js';

describe('reservedUnits', () => {
  const maxTokens = compileReservation({ pointer: '/max_tokens', add: 1000, default: 4096 })!;

  it.each([
    [{ max_tokens: 3000 }, 4000],
    [{ max_tokens: 0 }, 1000],
    [{ max_tokens: -5 }, 4096], // not a count of tokens: the default alone
    [{ max_tokens: 2.5 }, 4096],
    [{ max_tokens: '3000' }, 4096],
    [{ messages: [] }, 4096],
    [undefined, 4096], // no body, or not JSON
    [[3000], 4096],
  ])('%j → %i', (body, units) => {
    expect(reservedUnits(body, maxTokens, 10_000_000)).toBe(units);
  });

  it('reserves settleMax for an integer past the safe ones, as JSON.parse reads it, and the default for a negative one', () => {
    const reserved = (json: string) => reservedUnits(JSON.parse(json), maxTokens, 10_000_000);
    expect(reserved('{"max_tokens":9007199254740993}')).toBe(10_000_000);
    expect(reserved('{"max_tokens":1e20}')).toBe(10_000_000);
    // More digits than a double holds: `Infinity` to JSON.parse.
    expect(reserved(`{"max_tokens":1${'0'.repeat(400)}}`)).toBe(10_000_000);
    expect(reserved('{"max_tokens":-9007199254740993}')).toBe(4096);
    expect(reserved(`{"max_tokens":-1${'0'.repeat(400)}}`)).toBe(4096);
  });

  it('adds nothing without add, and caps at settleMax, the default too', () => {
    fc.assert(
      fc.property(
        fc.nat(),
        fc.nat(),
        fc.nat(),
        fc.integer({ min: 1, max: 1e7 }),
        (value, add, fallback, cap) => {
          const withAdd = compileReservation({ pointer: '/n', add, default: fallback })!;
          const without = compileReservation({ pointer: '/n', default: fallback })!;
          expect(reservedUnits({ n: value }, withAdd, cap)).toBe(Math.min(value + add, cap));
          expect(reservedUnits({ n: value }, without, cap)).toBe(Math.min(value, cap));
          expect(reservedUnits({}, withAdd, cap)).toBe(Math.min(fallback, cap));
        },
      ),
    );
  });

  it('compiles no reservation from a pointer that is not one', () => {
    expect(compileReservation({ pointer: 'max_tokens', default: 1 })).toBeUndefined();
  });
});

describe('bodyMatches', () => {
  const perModel = compileBodyMatch({ pointer: '/model', values: ['gpt-4o', 'gpt-4o-mini'] })!;

  it.each([
    [{ model: 'gpt-4o' }, true],
    [{ model: 'gpt-4o-mini', stream: true }, true],
    [{ model: 'gpt-4' }, false],
    [{ model: 'GPT-4O' }, false], // values are compared as written
    [{ model: ['gpt-4o'] }, false],
    [{ model: null }, false],
    [{}, false],
    [undefined, false],
    ['gpt-4o', false],
  ])('%j → %s', (body, matches) => {
    expect(bodyMatches(body, perModel)).toBe(matches);
  });

  it('follows nested pointers and array indices', () => {
    const first = compileBodyMatch({ pointer: '/messages/0/role', values: ['system'] })!;
    expect(bodyMatches({ messages: [{ role: 'system' }, { role: 'user' }] }, first)).toBe(true);
    expect(bodyMatches({ messages: [{ role: 'user' }] }, first)).toBe(false);
  });

  it('compiles no match from a pointer that is not one', () => {
    expect(compileBodyMatch({ pointer: 'model', values: ['x'] })).toBeUndefined();
  });
});
