/**
 * Every way a receiver (or a library) may repeat an export's credential in an answer, as one pattern:
 * each character as itself, JSON-escaped (`\"`, `\\`, `\/`, `\uXXXX`) or URL-encoded (`%XX` of its
 * UTF-8 bytes, `+` for a space), in any mix and either case of hex, plus the credential in base64 (what
 * Basic authentication would carry).
 */
export function credentialPattern(credential: string): RegExp {
  const characters = [...credential].map((c) => `(?:${characterForms(c).join('|')})`).join('');
  const encoded = Buffer.from(credential, 'utf8');
  const base64 = [encoded.toString('base64'), encoded.toString('base64url')].map((b) =>
    escapeRegExp(b.replace(/=+$/, '')),
  );
  return new RegExp([characters, ...new Set(base64)].join('|'), 'g');
}

/** The most characters one byte of a credential takes in any of its forms (`\u00XX`). */
export const LONGEST_FORM_PER_BYTE = 6;

const JSON_SHORT_ESCAPES: Readonly<Record<string, string>> = {
  '"': '\\"',
  '\\': '\\\\',
  '/': '\\/',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

function characterForms(c: string): string[] {
  const forms = new Set([escapeRegExp(c)]);
  const short = JSON_SHORT_ESCAPES[c];
  if (short !== undefined) forms.add(escapeRegExp(short));
  // \uXXXX of each UTF-16 unit (a surrogate pair for a character beyond the BMP).
  forms.add([...Array(c.length).keys()].map((i) => '\\\\u' + anyCaseHex(c.charCodeAt(i), 4)).join(''));
  forms.add([...Buffer.from(c, 'utf8')].map((byte) => '%' + anyCaseHex(byte, 2)).join(''));
  if (c === ' ') forms.add('\\+');
  return [...forms];
}

/** `n` in `width` hex digits, each letter matched in either case. */
const anyCaseHex = (n: number, width: number): string =>
  [...n.toString(16).padStart(width, '0')]
    .map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d))
    .join('');

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
