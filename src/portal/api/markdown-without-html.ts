/**
 * An API reference's Markdown without HTML (docs/decisions/0152-portal-reference-without-html.md):
 * swagger-ui renders a document's `description` fields as Markdown that may hold HTML, which its own
 * sanitiser only thins out. Every `<` outside code is written `&lt;`, so Markdown shows it as the
 * character and never reads a tag; code (fenced blocks, one-line spans) shows as written, where
 * Markdown reads no HTML anyway. A backslash before a backtick may undo a span, so such a text has
 * every `<` written `&lt;`, code included. Indented code blocks show `&lt;` too.
 */

/** Fenced code blocks from a fence at the start of a line to its closing fence (or the end), and one-line code spans. */
const CODE = /^ {0,3}(`{3,}|~{3,})[^\n]*\n[\s\S]*?(?:^ {0,3}\1[`~]*[ \t]*$|(?![\s\S]))|`[^`\n]*`/gm;

/** `text` as Markdown that holds no HTML. */
export function markdownWithoutHtml(text: string): string {
  const escape = (part: string) => part.replaceAll('<', '&lt;');
  if (text.includes('\\`')) return escape(text);
  let out = '';
  let from = 0;
  for (const code of text.matchAll(CODE)) {
    out += escape(text.slice(from, code.index)) + code[0];
    from = code.index + code[0].length;
  }
  return out + escape(text.slice(from));
}

/** A copy of an OpenAPI document with every `description` text made `markdownWithoutHtml`. */
export function documentWithoutHtml(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(documentWithoutHtml);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, field]) => [
      name,
      name === 'description' && typeof field === 'string'
        ? markdownWithoutHtml(field)
        : documentWithoutHtml(field),
    ]),
  );
}
