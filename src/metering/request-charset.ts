/**
 * The charsets a request's content type may name that its backend could read its body in otherwise
 * than Tollgate does (docs/decisions/0245). Express' `express.json()` (body-parser) decodes a body in
 * any charset whose name starts with `utf-` (by iconv-lite); Python reads the bytes whatever the field
 * says, and so does Tollgate (src/metering/json-text.ts). The two readings agree for UTF-8, UTF-16 and
 * UTF-32, which the bytes tell apart, but not for UTF-7 and its IMAP form, which read ASCII bytes
 * otherwise: `gpt+AC0-4o` is `gpt-4o` in UTF-7.
 */

/** The UTFs the bytes tell apart, as iconv-lite names them (`canonical`). */
const READ_AS_THE_BYTES_SAY = new Set(['utf8', 'utf16', 'utf16le', 'utf16be', 'utf32', 'utf32le', 'utf32be']);

/** Whether `contentType` names a charset that body-parser decodes a body in and Tollgate does not. */
export function namesOtherCharset(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  return charsetsOf(contentType).some(
    (charset) => charset.startsWith('utf-') && !READ_AS_THE_BYTES_SAY.has(canonical(charset)),
  );
}

/** An encoding's name as iconv-lite looks it up: without a `:NNNN` suffix, only letters and digits. */
const canonical = (name: string): string => name.replace(/:\d{4}$|[^0-9a-z]/g, '');

/**
 * The value of every `charset` parameter, in lower case, unquoted. body-parser reads the first one;
 * taking them all, and splitting at every `;` even inside a quoted value, misses none it could read.
 */
function charsetsOf(contentType: string): string[] {
  const charsets: string[] = [];
  for (const parameter of contentType.split(';').slice(1)) {
    const equals = parameter.indexOf('=');
    if (equals === -1 || parameter.slice(0, equals).trim().toLowerCase() !== 'charset') continue;
    charsets.push(unquoted(parameter.slice(equals + 1).trim()).toLowerCase());
  }
  return charsets;
}

/** A parameter's value: a quoted string's text, its escapes undone, up to its closing quote. */
function unquoted(value: string): string {
  if (!value.startsWith('"')) return value;
  let text = '';
  for (let i = 1; i < value.length && value[i] !== '"'; i++) {
    if (value[i] === '\\' && i + 1 < value.length) i++;
    text += value[i];
  }
  return text;
}
