/**
 * The portal changes and reads through the management operations themselves (their validators,
 * transaction, audit entry, webhook events and announcements), never a copy of them: a portal route
 * checks that what it names belongs to the session's consumer, then calls the operation with inputs
 * it built, as the portal actor (res.locals.caller).
 */
import type { Response } from 'express';
import type { ManagementContext } from '../management/context.js';
import type { Operation } from '../management/operation.js';
import { OPERATIONS } from '../management/resources/index.js';
import { bodyValidator, paramsValidator, queryValidator } from '../management/validation.js';

export interface Inputs {
  readonly params?: Record<string, string>;
  readonly query?: Record<string, unknown>;
  readonly body?: Record<string, unknown>;
}

type Call = (inputs: Inputs, res: Response, ctx: ManagementContext) => Promise<void>;

/**
 * An operation of the list, by id, its validators compiled once (throws at start-up for an unknown
 * id); called, it answers the request itself (a read passed through, CSV included).
 */
export function answeredBy(id: string): Call {
  const op: Operation | undefined = OPERATIONS.find((candidate) => candidate.id === id);
  if (!op) throw new Error(`no management operation ${id}`);
  const params = op.params && paramsValidator(op.params);
  const query = op.query && queryValidator(op.query);
  const body = op.body && bodyValidator(op.body);
  return async (inputs, res, ctx) => {
    const call = {
      params: params ? params(inputs.params ?? {}) : {},
      query: query ? query(inputs.query ?? {}) : {},
      body: body ? body(inputs.body ?? {}) : {},
      req: res.req,
      res,
      ctx,
    };
    await op.handle(call as never);
  };
}

/**
 * Calls the operation and resolves the JSON body of its success, for the portal route to shape: the
 * operation writes it to a stand-in of the response sharing its `locals` (the caller) and request. A
 * refusal is thrown as the operation throws it.
 */
export function resultOf(
  id: string,
): (inputs: Inputs, res: Response, ctx: ManagementContext) => Promise<unknown> {
  const call = answeredBy(id);
  return async (inputs, res, ctx) => {
    let body: unknown;
    const standIn: Response = Object.create(res) as Response;
    Object.assign(standIn, {
      status: () => standIn,
      location: () => standIn,
      set: () => standIn,
      type: () => standIn,
      json: (value: unknown) => ((body = JSON.parse(JSON.stringify(value)) as unknown), standIn),
      send: (text: string) => ((body = JSON.parse(text) as unknown), standIn),
    });
    await call(inputs, standIn, ctx);
    return body;
  };
}
