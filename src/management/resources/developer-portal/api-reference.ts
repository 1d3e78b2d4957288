/**
 * Fetching `apiReference.url`: when it is set, and on demand (POST
 * /tollgate/portal/settings/api-reference/fetch). The portal serves the copy from its own origin, so
 * the page never reaches to another site. Every hop, redirects included, goes only where
 * reference-reach.ts allows.
 */
import { request, type Dispatcher } from 'undici';
import type { PortalSettingsRepository } from '../../../store/portal-settings-repository.js';
import { referenceDispatcher, urlProblem, type ReferenceReach } from './reference-reach.js';
import { MAX_REFERENCE_DOCUMENT_BYTES } from './schemas.js';

const FETCH_TIMEOUT_MS = 10_000;
const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/**
 * Whatever stopped the fetch before an answer (refused address, closed port, timeout, bad TLS): one
 * message, so that the error tells nobody what listens where.
 */
const NOT_FETCHED = 'could not fetch the document';

/** The answer at `url` after at most MAX_REDIRECTS redirects, each hop allowed by `reach`; undefined: none. */
async function followed(
  url: URL,
  reach: ReferenceReach,
  dispatcher: Dispatcher,
): Promise<Dispatcher.ResponseData | undefined> {
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    if (urlProblem(url, reach) !== undefined) return undefined;
    const answer = await request(url, {
      dispatcher,
      headers: { accept: 'application/json' },
      headersTimeout: FETCH_TIMEOUT_MS,
      bodyTimeout: FETCH_TIMEOUT_MS,
    });
    const location = answer.headers.location;
    if (!REDIRECTS.has(answer.statusCode) || typeof location !== 'string') return answer;
    await answer.body.dump();
    url = new URL(location, url);
  }
  return undefined;
}

/** The document at `url` as JSON text, or why there is none. */
async function fetchDocument(
  url: string,
  reach: ReferenceReach,
): Promise<{ document: string } | { error: string }> {
  const dispatcher = referenceDispatcher(reach);
  try {
    const answer = await followed(new URL(url), reach, dispatcher).catch(() => undefined);
    if (answer === undefined) return { error: NOT_FETCHED };
    const { statusCode, body } = answer;
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
    return { error: err instanceof SyntaxError ? 'the document is not JSON' : NOT_FETCHED };
  } finally {
    await dispatcher.close();
  }
}

/** Fetches and stores the document (or why it failed, keeping the last good copy). */
export async function refreshApiReference(
  url: string,
  reach: ReferenceReach,
  portal: PortalSettingsRepository,
  now: () => Date,
): Promise<void> {
  const fetched = await fetchDocument(url, reach);
  await portal.saveFetch('error' in fetched ? fetched : { document: fetched.document, at: now() });
}
