import { credentialPattern, LONGEST_FORM_PER_BYTE } from './credential-forms.js';

/**
 * What one request to a receiver came to:
 * - `delivered`: a 2xx, or a refusal that says the receiver already holds the id: a 409 Conflict to a
 *   request of one event (a batch's 409 does not say which id conflicts, so its events are sent again
 *   one by one), or a format's own answer (Lago's 422);
 * - `refused`: the receiver answered and will not take this send as it is (a 4xx): it alone waits and
 *   is tried again, the others go on;
 * - `unreachable`: no answer, a timeout, 408, 425, 429 or a 5xx: the receiver is failing, so the run
 *   stops sending and the export waits before trying again.
 */
export type SendOutcome =
  | { readonly kind: 'delivered'; readonly status: number }
  | { readonly kind: 'refused'; readonly status: number; readonly error: string }
  | { readonly kind: 'unreachable'; readonly status: number | null; readonly error: string };

const RETRY_LATER = new Set([408, 425, 429]);
/** Conflict: the receiver holds the event's id already (a retry whose first answer was lost). */
const ALREADY_HELD = 409;

export function outcomeOf(status: number, body: string, alreadyHeld: boolean, events = 1): SendOutcome {
  if ((status >= 200 && status < 300) || (status === ALREADY_HELD && events === 1) || alreadyHeld)
    return { kind: 'delivered', status };
  const error = `HTTP ${status}${body === '' ? '' : `: ${body}`}`;
  if (status >= 500 || RETRY_LATER.has(status)) return { kind: 'unreachable', status, error };
  return { kind: 'refused', status, error };
}

/** Longest receiver answer kept in the run log. */
const MAX_ERROR_LENGTH = 300;

/**
 * An error text fit for the run log and the logs: the credential cut out wherever the receiver (or a
 * library) repeated it, in any of its forms (credential-forms.ts), and shortened. `cut`: the text is the
 * start of a longer answer, so its end may hold the first part of a credential, which no pattern of the
 * whole credential finds: the end that could (the longest form's length) is dropped. The caller reads
 * that much more than it means to keep.
 */
export function redacted(text: string, credential: string | undefined, cut = false): string {
  let clean = text;
  if (credential !== undefined && credential !== '') {
    const pattern = credentialPattern(credential);
    if (cut) clean = withoutPartialEnd(clean, pattern, credentialSlack(credential));
    clean = clean.replace(pattern, '[credential]');
  }
  return clean.length > MAX_ERROR_LENGTH ? clean.slice(0, MAX_ERROR_LENGTH) + '…' : clean;
}

/** The most characters any form of `credential` takes: what a cut answer's end may hold of it. */
export const credentialSlack = (credential: string | undefined): number =>
  LONGEST_FORM_PER_BYTE * Buffer.byteLength(credential ?? '', 'utf8');

/** `text` less its last `slack` characters, and less a whole credential form that would straddle that cut. */
function withoutPartialEnd(text: string, pattern: RegExp, slack: number): string {
  let end = Math.max(0, text.length - slack);
  for (const match of text.matchAll(pattern))
    if (match.index < end && match.index + match[0].length > end) end = match.index;
  return text.slice(0, end) + '…';
}
