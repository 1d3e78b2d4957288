import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { passGate, settleAfter, type TollgateMiddlewareOptions } from './gate.js';
import type { VerifyAnswer } from './verify-types.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Tollgate's verify answer for this request, set by tollgateFastify. */
    tollgate?: VerifyAnswer;
  }
}

const plugin: FastifyPluginAsync<TollgateMiddlewareOptions> = async (fastify, options) => {
  fastify.decorateRequest('tollgate', undefined);
  const gate = async (request: FastifyRequest, reply: FastifyReply) => {
    const outcome = await passGate(options, {
      headers: request.headers,
      method: request.method,
      url: request.url,
      clientAddress: request.ip,
      body: request.body,
    });
    request.tollgate = outcome.answer;
    if (!outcome.admitted)
      return reply
        .code(outcome.response.status)
        .headers(outcome.response.headers)
        .send(outcome.response.body);
    reply.headers(outcome.headers);
    settleAfter(options, outcome, reply.raw);
  };
  // A plan that reads the body decides once it is parsed; else before it is read, as the proxy does.
  if (options.body === undefined) fastify.addHook('onRequest', gate);
  else fastify.addHook('preHandler', gate);
};

/**
 * Fastify plugin: an onRequest hook (preHandler with `body`) that admits a request only when Tollgate's
 * verify does, and otherwise answers it as the Tollgate proxy would (401, 403 or 429, same bodies and
 * RateLimit headers). An admitted request carries the answer as `request.tollgate` and its reply the
 * RateLimit headers; with `reserve` and `settle`, the units its reply reports settle its reservation once
 * it has ended. When verify itself fails the hook throws (Fastify answers 500 unless an error handler
 * does). Registered without encapsulation (as fastify-plugin does), so it guards the routes of the scope
 * that registers it.
 */
export const tollgateFastify: FastifyPluginAsync<TollgateMiddlewareOptions> = Object.assign(plugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'tollgate',
});
