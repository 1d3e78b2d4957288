import type { RequestHandler } from 'express';
import { passGate, settleAfter, type TollgateMiddlewareOptions } from './gate.js';
import type { VerifyAnswer } from './verify-types.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express types its request through this global namespace
  namespace Express {
    interface Request {
      /** Tollgate's verify answer for this request, set by tollgateExpress. */
      tollgate?: VerifyAnswer;
    }
  }
}

/**
 * Express middleware that admits a request only when Tollgate's verify does, and otherwise answers it
 * as the Tollgate proxy would (401, 403 or 429, same bodies and RateLimit headers). An admitted request
 * carries the answer as `req.tollgate` and its response the RateLimit headers; with `reserve` and
 * `settle`, the units its response reports settle its reservation once it has ended. When verify itself
 * fails the error goes to `next(err)`.
 */
export function tollgateExpress(options: TollgateMiddlewareOptions): RequestHandler {
  return (req, res, next) => {
    passGate(options, {
      headers: req.headers,
      method: req.method,
      url: req.originalUrl,
      clientAddress: req.ip,
      body: req.body as unknown,
    }).then((outcome) => {
      req.tollgate = outcome.answer;
      if (!outcome.admitted) {
        res.writeHead(outcome.response.status, outcome.response.headers);
        res.end(outcome.response.body);
        return;
      }
      for (const [name, value] of Object.entries(outcome.headers)) res.setHeader(name, value);
      settleAfter(options, outcome, res);
      next();
    }, next);
  };
}
