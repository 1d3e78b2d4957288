/**
 * A CSV the API serves, saved as a file: fetched with the token in a header (never in a URL, which
 * logs and history keep), then handed to the browser's download as a blob URL of this origin.
 */

/** `2026-11-21T14:00:00Z` → `20261121T140000Z`: no colons, which some file systems refuse. */
const fileTime = (iso: string) => iso.replace(/[-:]/g, '');

/** Saves `blob` as `<name>-<from>-<to>.csv`, or `<name>.csv` for what has no range. */
export function saveCsv(blob: Blob, name: string, range?: { from: string; to: string }): void {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = range ? `${name}-${fileTime(range.from)}-${fileTime(range.to)}.csv` : `${name}.csv`;
  link.click();
  // The download reads the blob once started: a minute later it is no longer needed.
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

/** What the API's CSV answers take besides the JSON ones'. */
export const AS_CSV = { parseAs: 'blob', headers: { accept: 'text/csv' } } as const;
