/**
 * A CSV the API serves, saved as a file: fetched with the token in a header (never in a URL, which
 * logs and history keep), then handed to the browser's download as a blob URL of this origin.
 */
import { callCsv, type Query } from './api';

/** `2026-11-21T14:00:00Z` → `20261121T140000Z`: no colons, which some file systems refuse. */
const fileTime = (iso: string) => iso.replace(/[-:]/g, '');

export async function downloadCsv(path: string, query: Query & { from: string; to: string }, name: string) {
  const blob = await callCsv(path, { query });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `${name}-${fileTime(query.from)}-${fileTime(query.to)}.csv`;
  link.click();
  // The download reads the blob once started: a minute later it is no longer needed.
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}
