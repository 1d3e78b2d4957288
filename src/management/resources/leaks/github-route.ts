/**
 * `POST /tollgate/secret-scanning/github`: GitHub's secret scanning partner program reports secrets
 * found in public code here (docs/guides/leaked-keys.md). Public, so nothing is done for a body
 * GitHub did not sign (ECDSA P-256 over the raw bytes, with the key its headers name): 401. A signed
 * body handled in the last 10 minutes, on any replica, is answered as it was and changes nothing.
 */
import { hash } from 'node:crypto';
import type { RequestHandler } from 'express';
import { AppError } from '../../../errors.js';
import { hasNoControlCharacter } from '../../../plans/clean-text.js';
import { codePointLength } from '../../../plans/customer-id.js';
import type { GitHubSigningKeys } from '../../../keys/github-signing-keys.js';
import { forwardedFacts, requestIdOf } from '../../../proxy/forwarding-headers.js';
import type { Caller } from '../../authenticate.js';
import type { ManagementContext } from '../../context.js';
import { readRawBody } from '../../json-body.js';
import { handleLeakReport, type ReportedSecret } from './leak-handling.js';

export const GITHUB_REPORTS_PATH = '/tollgate/secret-scanning/github';
/** How long a handled report is remembered: one sent again within it changes nothing. */
const REPLAY_WINDOW_MS = 10 * 60_000;
/** GitHub sends matches in batches; far more in one body is not GitHub. */
const MAX_MATCHES = 1_000;

export function githubReportsRoute(ctx: ManagementContext, signingKeys: GitHubSigningKeys): RequestHandler {
  return (req, res, next) => {
    void (async () => {
      const requestId = requestIdOf(req.headers);
      res.set('x-request-id', requestId);
      const identifier = req.get('github-public-key-identifier');
      const signature = req.get('github-public-key-signature');
      const body = await readRawBody(req, res);
      if (!identifier || !signature || !(await signingKeys.verify(body, identifier, signature)))
        throw new AppError('unauthorized', "Not signed by one of GitHub's secret scanning keys");
      const reported = matchesOf(body);
      const caller: Caller = {
        actor: { type: 'system', name: 'secret-scanning' },
        scopes: new Set(),
        expiresAt: null,
        requestId,
        clientAddress: forwardedFacts(req, ctx.trustProxy).client,
      };
      res.locals.caller = caller;
      const answer = await handleLeakReport(ctx, res, reported, 'github', {
        bodyHash: hash('sha256', body, 'buffer'),
        since: new Date(ctx.clock() - REPLAY_WINDOW_MS),
      });
      res.type('application/json').send(answer);
    })().catch(next);
  };
}

/** The longest `type` and `url` of a report kept: the url is stored with the key and its audit entry. */
const MAX_TYPE_LENGTH = 100;
const MAX_URL_LENGTH = 2_048;

/** A string of at most `max` characters (code points, as the API counts) without a control character. */
const isCleanText = (value: unknown, max: number): value is string =>
  typeof value === 'string' && codePointLength(value) <= max && hasNoControlCharacter(value);

/**
 * GitHub's `[{token, type, url, source}]`, `type` and `url` bounded and without control characters;
 * anything else is 400 `validation_failed`.
 */
function matchesOf(body: Buffer): ReportedSecret[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new AppError('invalid_json');
  }
  const invalid = () =>
    new AppError(
      'validation_failed',
      `Expected a JSON array of 1 to ${MAX_MATCHES} {token, type, url, source}`,
    );
  if (!Array.isArray(parsed) || parsed.length === 0 || parsed.length > MAX_MATCHES) throw invalid();
  return parsed.map((match: unknown) => {
    const { token, type, url } = (match ?? {}) as Record<string, unknown>;
    if (
      typeof token !== 'string' ||
      !isCleanText(type, MAX_TYPE_LENGTH) ||
      (url !== undefined && !isCleanText(url, MAX_URL_LENGTH))
    )
      throw invalid();
    return { token, type, url: url ?? null };
  });
}
