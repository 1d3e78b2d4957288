/**
 * Fetching `apiReference.url`: when it is set, and on demand (POST
 * /tollgate/portal/settings/api-reference/fetch). The portal serves the copy from its own origin, so
 * the page never reaches to another site.
 */
import { request } from 'undici';
import type { PortalSettingsRepository } from '../../../store/portal-settings-repository.js';
import { MAX_REFERENCE_DOCUMENT_BYTES } from './schemas.js';

const FETCH_TIMEOUT_MS = 10_000;

/** The document at `url` as JSON text, or why there is none. */
async function fetchDocument(url: string): Promise<{ document: string } | { error: string }> {
  try {
    const { statusCode, body } = await request(url, {
      headers: { accept: 'application/json' },
      headersTimeout: FETCH_TIMEOUT_MS,
      bodyTimeout: FETCH_TIMEOUT_MS,
    });
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_REFERENCE_DOCUMENT_BYTES) {
        body.destroy();
        return { error: `the document is larger than ${MAX_REFERENCE_DOCUMENT_BYTES} bytes` };
      }
      chunks.push(chunk);
    }
    if (statusCode !== 200) return { error: `the server answered ${statusCode}` };
    const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      return { error: 'the document is not a JSON object' };
    return { document: JSON.stringify(parsed) };
  } catch (err) {
    return {
      error:
        err instanceof SyntaxError ? 'the document is not JSON' : `not fetched: ${(err as Error).message}`,
    };
  }
}

/** Fetches and stores the document (or why it failed, keeping the last good copy). */
export async function refreshApiReference(
  url: string,
  portal: PortalSettingsRepository,
  now: () => Date,
): Promise<void> {
  const fetched = await fetchDocument(url);
  await portal.saveFetch('error' in fetched ? fetched : { document: fetched.document, at: now() });
}
