/**
 * `POST {MANAGEMENT_PREFIX}/tollgate/verify` served by the public server itself, not through Express:
 * verify sits on the request path of every server that uses it, and must answer faster than the proxy
 * forwards (docs/guides/verify-and-client.md). It takes the management API's own steps, framework-free: the caller
 * and its throttle (`callerIdentifier`), the operation's scope, the body read (`readJsonBody`) and
 * validated by the operation's own schema, the answer (`verifiedText`), the error envelope
 * (`appErrorOf`), `Cache-Control: no-store`, `x-request-id` and the management metrics. Any other
 * method on the path is the management app's (405 with `Allow`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { AppError, retryAfterOf } from '../../../errors.js';
import { requestIdOf } from '../../../proxy/forwarding-headers.js';
import { appErrorOf } from '../../app-error-of.js';
import { callerIdentifier, isRefusal, scopeChallenge } from '../../authenticate.js';
import type { ManagementDeps } from '../../context.js';
import { readJsonBody } from '../../json-body.js';
import { VERIFY_PATH, verifiedText, verifyOperation } from './operations.js';
import { bodyValidator } from '../../validation.js';
import type { VerifyRequest } from './schemas.js';

/** Answers (and returns true) a verify call to `path` (the request's, without its query); else false. */
export type VerifyRoute = (req: IncomingMessage, res: ServerResponse, path: string) => boolean;

type Headers = Record<string, string | number>;

export function createVerifyRoute(deps: ManagementDeps): VerifyRoute {
  const identify = callerIdentifier({
    rootToken: deps.rootToken,
    tokens: deps.tokenLookup,
    throttle: deps.throttle,
    trustProxy: deps.trustProxy,
    clock: deps.clock,
  });
  const validate = bodyValidator(verifyOperation.body!);
  const scope = verifyOperation.scope;
  const routePath = deps.prefix + VERIFY_PATH;

  const answer = (res: ServerResponse, status: number, headers: Headers, text: string): void => {
    headers['content-type'] = 'application/json; charset=utf-8';
    headers['content-length'] = Buffer.byteLength(text);
    res.writeHead(status, headers);
    res.end(text);
    deps.metrics.managementRequests.inc({ status: String(status) });
  };
  const refuse = (res: ServerResponse, headers: Headers, error: AppError): void => {
    const retryAfter = retryAfterOf(error.code);
    if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
    answer(res, error.status, headers, JSON.stringify(error.toBody()));
  };

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedAt = performance.now();
    const requestId = requestIdOf(req.headers);
    // Answers carry keys' names and metadata: no cache anywhere may keep them.
    const headers: Headers = { 'cache-control': 'no-store', 'x-request-id': requestId };
    try {
      const caller = await identify(req, requestId);
      if (isRefusal(caller)) return refuse(res, Object.assign(headers, caller.headers), caller.error);
      if (scope !== null && !caller.scopes.has(scope)) {
        headers['www-authenticate'] = scopeChallenge(scope);
        return refuse(res, headers, new AppError('insufficient_scope', `This call needs the scope ${scope}`));
      }
      const body = validate((await readJsonBody(req, res)).value) as VerifyRequest;
      answer(
        res,
        200,
        headers,
        await verifiedText(deps.verification, deps.metrics, body, receivedAt, requestId),
      );
    } catch (err) {
      if (res.headersSent) return void res.destroy();
      refuse(res, headers, appErrorOf(err, deps, 'POST', routePath));
    }
  }

  return (req, res, path) => {
    if (req.method !== 'POST' || path !== routePath) return false;
    void serve(req, res);
    return true;
  };
}
