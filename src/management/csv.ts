/** CSV answers of the management API: whether a caller asks for one, and its fields. */
import type { Request } from 'express';
import Negotiator from 'negotiator';

/**
 * A CSV field (RFC 4180). Paths and customer ids come from clients and the CSV goes into
 * spreadsheets, so (OWASP, CSV injection) a name is always quoted, and one that a spreadsheet would
 * read as a formula (starting with =, +, -, @, a tab or a carriage return) starts with a `'`.
 */
export function csvField(value: string | number, name = false): string {
  let text = String(value);
  if (name && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return name || /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * Whether the caller prefers CSV: the first of its accepted types (by quality, parameters such as
 * `charset` set aside) that names either answer decides; JSON when none does.
 */
export function wantsCsv(req: Request): boolean {
  const preferred = new Negotiator(req)
    .mediaTypes()
    .find((type) => /^(text\/(csv|\*)|application\/(json|\*)|\*\/\*)$/.test(type));
  return preferred === 'text/csv' || preferred === 'text/*';
}
