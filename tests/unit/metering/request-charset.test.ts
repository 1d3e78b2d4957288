import { parse as parseContentType } from 'content-type';
import fc from 'fast-check';
import iconv from 'iconv-lite';
import { namesOtherCharset } from '../../../src/metering/request-charset.js';
import { parses } from './parses.js';

it.each([
  [undefined, false],
  ['application/json', false],
  ['application/json; charset=utf-8', false],
  ['application/json; charset="UTF-8"', false],
  ['application/json; charset=utf-16le', false],
  ['application/json;charset=UTF-32', false],
  // body-parser answers 415 to a charset not named `utf-…`, and Python ignores it.
  ['application/json; charset=iso-8859-1', false],
  ['application/json; charset=utf7', false],
  ['application/json; charset=utf-7', true],
  ['application/json; charset=UTF-7', true],
  ['application/json; charset=utf-7-imap', true],
  ['application/json ; Charset = "utf-7"', true],
  ['application/json; charset="utf\\-7"', true],
  ['application/json; charset=utf-7:1234', true],
  ['application/json; charset=utf-7.', true],
  // Any media type: `express.json({type})` may parse it.
  ['text/plain; charset=utf-7', true],
  // body-parser reads the first; any other is refused too.
  ['application/json; charset=utf-8; charset=utf-7', true],
  ['application/json; x="a;b"; charset=utf-7', true],
])('%s names a charset read otherwise: %s', (contentType, named) => {
  expect(namesOtherCharset(contentType)).toBe(named);
});

it("names every charset in which body-parser and iconv-lite read a JSON text's ASCII otherwise", () => {
  // `+AC0-` is `-` in UTF-7, `&AC0-` in its IMAP form.
  const text = '{"model":"gpt+AC0-4o","stop":"&AC0-"}';
  const spelled = fc
    .tuple(
      fc.constantFrom('utf-7', 'utf-7-imap', 'utf-8', 'utf-16', 'utf-32le', 'utf--7', 'utf-7_imap', 'utf7'),
      fc.constantFrom('', ':1234', '.', ' '),
      fc.boolean(),
      fc.boolean(),
    )
    .map(([name, suffix, upper, quoted]) => {
      const value = upper ? (name + suffix).toUpperCase() : name + suffix;
      return quoted ? `"${value.replace(/-/g, '\\-')}"` : value;
    });
  const before = fc.constantFrom('', '; x=1', '; x="a;b"', ';charset=utf-8');
  let readOtherwise = 0;
  fc.assert(
    fc.property(before, spelled, (first, charset) => {
      const contentType = `application/json${first}; charset=${charset}`;
      // As body-parser finds the charset, and decodes the body in it.
      const named = parseContentType(contentType).parameters.charset?.toLowerCase();
      if (named === undefined || !named.startsWith('utf-') || !iconv.encodingExists(named)) return;
      const read = iconv.decode(Buffer.from(text), named);
      if (read === text || !parses(read)) return;
      readOtherwise++;
      expect(namesOtherCharset(contentType)).toBe(true);
    }),
  );
  expect(readOtherwise).toBeGreaterThan(0);
});
