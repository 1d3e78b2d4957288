import { STRIPE_V2_VERSION } from './formats/stripe-v2.js';
import { bearer, servicePath, type ExportTarget, type ReceiverRequest } from './usage-send.js';

/** What one HTTP request to a receiver came to: its answer, or no answer at all. */
export type PostResult =
  | {
      readonly kind: 'answer';
      readonly status: number;
      readonly text: string;
      /** The answer was longer than what was read of it. */
      readonly cut: boolean;
      readonly retryAfter: string | string[] | undefined;
    }
  | { readonly kind: 'failed'; readonly error: string };

/** A session is renewed this long before Stripe says it expires, so no request carries a dying token. */
const RENEW_BEFORE_MS = 60_000;

interface Session {
  /** The secret key it was made with: a PATCHed credential gets a session of its own. */
  readonly credential: string | undefined;
  readonly token: string;
  readonly expiresAtMs: number;
}

/**
 * Stripe's meter event sessions, one per stripe-v2 export in this process: `POST
 * {url}/v2/billing/meter_event_session` with the secret key answers an `authentication_token` valid
 * until `expires_at` (15 minutes), which the stream takes as bearer. A session is made when there is
 * none, when it is about to expire (by the real clock: Stripe's), and when the stream refuses its token
 * (401): then the request is made once more with a new one.
 */
export class StripeSessions {
  private readonly sessions = new Map<string, Session>();
  /** Sessions being opened: requests in flight together wait for one session rather than each opening one. */
  private readonly opening = new Map<string, Promise<Session | PostResult>>();

  constructor(
    private readonly post: (request: ReceiverRequest, target: ExportTarget) => Promise<PostResult>,
  ) {}

  async send(target: ExportTarget, requestWith: (token: string) => ReceiverRequest): Promise<PostResult> {
    let session = this.current(target);
    const made = session === undefined;
    if (session === undefined) {
      const opened = await this.open(target);
      if (!('token' in opened)) return opened;
      session = opened;
    }
    const answer = await this.post(requestWith(session.token), target);
    if (answer.kind !== 'answer' || answer.status !== 401) return answer;
    // Forget the refused token, unless a request beside this one has replaced it already.
    if (this.sessions.get(target.exportId) === session) this.sessions.delete(target.exportId);
    if (made) return answer;
    const renewed = await this.open(target);
    return 'token' in renewed ? this.post(requestWith(renewed.token), target) : renewed;
  }

  private current(target: ExportTarget): Session | undefined {
    const session = this.sessions.get(target.exportId);
    const usable =
      session !== undefined &&
      session.credential === target.credential &&
      session.expiresAtMs - RENEW_BEFORE_MS > Date.now();
    return usable ? session : undefined;
  }

  /** A new session, kept for the export (or the one being opened); or the answer that refused one. */
  private open(target: ExportTarget): Promise<Session | PostResult> {
    const fresh = this.current(target);
    if (fresh) return Promise.resolve(fresh);
    let opening = this.opening.get(target.exportId);
    if (opening === undefined) {
      opening = this.request(target).finally(() => this.opening.delete(target.exportId));
      this.opening.set(target.exportId, opening);
    }
    return opening;
  }

  private async request(target: ExportTarget): Promise<Session | PostResult> {
    const answer = await this.post(
      {
        url: servicePath(target.url, '/v2/billing/meter_event_session'),
        headers: {
          'content-type': 'application/json',
          'stripe-version': STRIPE_V2_VERSION,
          ...bearer(target.credential),
        },
        body: '{}',
      },
      target,
    );
    if (answer.kind !== 'answer' || answer.status < 200 || answer.status >= 300) return answer;
    const session = sessionOf(answer.text, target.credential);
    if (session === undefined)
      return {
        kind: 'failed',
        error: 'the meter event session answer has no authentication_token and expires_at',
      };
    this.sessions.set(target.exportId, session);
    return session;
  }
}

function sessionOf(text: string, credential: string | undefined): Session | undefined {
  try {
    const body = JSON.parse(text) as { authentication_token?: unknown; expires_at?: unknown };
    const expiresAtMs =
      typeof body.expires_at === 'number' ? body.expires_at * 1000 : Date.parse(String(body.expires_at));
    if (typeof body.authentication_token !== 'string' || body.authentication_token === '') return undefined;
    if (Number.isNaN(expiresAtMs)) return undefined;
    return { credential, token: body.authentication_token, expiresAtMs };
  } catch {
    return undefined;
  }
}
