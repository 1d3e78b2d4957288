/** One spelling per path: unreserved escapes decoded, the others' hex upper-cased, nothing else touched. */
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { normalisedPath } from '../../src/plans/normalised-path.js';

/** Fastify's own decoder (find-my-way, what a Fastify 5 backend routes by). */
const { safeDecodeURI } = createRequire(import.meta.url)('find-my-way/lib/url-sanitizer.js') as {
  safeDecodeURI: (path: string) => { path: string };
};

const hex = fc.constantFrom(...'0123456789abcdefABCDEF');
/** Path characters, escapes of any byte in either case, and stray `%`s. */
const piece = fc.oneof(
  fc.constantFrom('/', 'a', 'Z', '9', '-', '.', '_', '~', ';', '=', '@', ':', '+', ',', '%', '%%'),
  fc.tuple(hex, hex).map(([h, l]) => `%${h}${l}`),
  fc.integer({ min: 0, max: 255 }).map((b) => `%${b.toString(16).padStart(2, '0')}`),
);
const path = fc.array(piece, { maxLength: 24 }).map((pieces) => '/' + pieces.join(''));
/** Escapes already in upper case: only the decoding of unreserved ones applies to them. */
const upperPath = path.map((p) => p.replace(/%([0-9a-f]{2})/gi, (_, h: string) => `%${h.toUpperCase()}`));

const decoded = (p: string): string | undefined => {
  try {
    return decodeURIComponent(p);
  } catch {
    return undefined;
  }
};

describe('normalisedPath', () => {
  it('decodes unreserved escapes and upper-cases the others', () => {
    expect(normalisedPath('/v2/%73earch/q')).toBe('/v2/search/q');
    expect(normalisedPath('/%76%32/search/q')).toBe('/v2/search/q');
    expect(normalisedPath('/a%7e%2D%2e%5F')).toBe('/a~-._');
    expect(normalisedPath('/a%2fb%20c%c3%a9')).toBe('/a%2Fb%20c%C3%A9');
    expect(normalisedPath('/a%25%37%33')).toBe('/a%2573');
  });

  it('leaves a % without two hex digits as it is, and returns a path without % unchanged', () => {
    expect(normalisedPath('/100%/%zz/%4')).toBe('/100%/%zz/%4');
    // Decoded, %41 would make the stray % before it an escape of its own (%A%).
    expect(normalisedPath('/%%41%')).toBe('/%%41%');
    expect(normalisedPath('/%4%31/%%7e')).toBe('/%4%31/%~');
    const plain = '/v1/search/q';
    expect(normalisedPath(plain)).toBe(plain);
  });

  it('is idempotent', () => {
    fc.assert(
      fc.property(path, (p) => {
        const once = normalisedPath(p);
        expect(normalisedPath(once)).toBe(once);
      }),
      { numRuns: 5_000 },
    );
  });

  it('never changes what a full decoder makes of the path', () => {
    fc.assert(
      fc.property(path, (p) => {
        expect(decoded(normalisedPath(p))).toBe(decoded(p));
      }),
      { numRuns: 5_000 },
    );
  });

  it("never changes what Fastify's decoder makes of a path its escapes' case aside", () => {
    fc.assert(
      fc.property(upperPath, (p) => {
        let before: string | undefined;
        try {
          before = safeDecodeURI(p).path;
        } catch {
          return; // Fastify answers 400 to a path it cannot decode, whichever spelling it gets.
        }
        expect(safeDecodeURI(normalisedPath(p)).path).toBe(before);
      }),
      { numRuns: 5_000 },
    );
  });
});
