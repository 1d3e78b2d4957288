/**
 * The Express side of the operations: each path's methods with their scope, body reader and validators
 * (made here, each compiled once at its first request), and a 405 with `Allow` for every other method.
 */
import type { ErrorRequestHandler, RequestHandler, Router } from 'express';
import { AppError } from '../errors.js';
import { requires } from './authenticate.js';
import type { ManagementContext } from './context.js';
import { jsonBody } from './json-body.js';
import type { Method, Operation } from './operation.js';
import { bodyValidator, paramsValidator, queryValidator } from './validation.js';

/** Methods in the order `Allow` names them; HEAD goes with GET. */
const METHOD_ORDER: readonly Method[] = ['get', 'post', 'patch', 'delete'];

export function allowedMethods(operations: readonly Operation[]): string {
  return METHOD_ORDER.filter((method) => operations.some((op) => op.method === method))
    .flatMap((method) => (method === 'get' ? ['GET', 'HEAD'] : [method.toUpperCase()]))
    .join(', ');
}

function methodNotAllowed(allow: string): RequestHandler {
  return (_req, res, next) => {
    res.set('Allow', allow);
    next(new AppError('method_not_allowed', `Method not allowed on this route (allowed: ${allow})`));
  };
}

/** A body that may be left out entirely (no Content-Type, no content): read as `{}`; otherwise JSON as usual. */
const optionalJsonBody: RequestHandler = (req, res, next) => {
  const empty =
    req.headers['content-type'] === undefined &&
    req.headers['transfer-encoding'] === undefined &&
    (req.headers['content-length'] ?? '0') === '0';
  if (!empty) {
    jsonBody(req, res, next);
    return;
  }
  req.body = {};
  next();
};

/**
 * The middleware of one operation, in order: its scope; its path parameters (a path that names nothing
 * is a 404 whatever the body); its body read; then its query and body validated and the handler called.
 */
function handlersOf(operation: Operation, ctx: ManagementContext): RequestHandler[] {
  const identity = <T>(value: T) => value;
  const params = operation.params ? paramsValidator(operation.params) : identity;
  const query = operation.query ? queryValidator(operation.query) : identity;
  const body = operation.body ? bodyValidator(operation.body) : identity;
  const checkParams: RequestHandler = (req, res, next) => {
    res.locals.params = params({ ...req.params });
    next();
  };
  const reader = operation.body ? [operation.body.optional ? optionalJsonBody : jsonBody] : [];
  const handle: RequestHandler = async (req, res) => {
    const call = {
      params: res.locals.params as unknown,
      query: query({ ...req.query }),
      body: body(req.body),
      req,
      res,
      ctx,
    };
    // The validators were compiled from the operation's own schemas: the values have the types it states.
    await operation.handle(call as never);
  };
  const scope = operation.scope === null ? [] : [requires(operation.scope)];
  return [...scope, checkParams, ...reader, handle];
}

/** Whether a requested path (under the router) falls under an operation's path: `:name` is one non-empty segment. */
function fallsUnder(path: string, operationPath: string): boolean {
  const segments = path.split('/');
  const expected = operationPath.split('/');
  return (
    segments.length === expected.length &&
    expected.every((segment, i) => (segment.startsWith(':') ? segments[i] !== '' : segment === segments[i]))
  );
}

/**
 * A path parameter that cannot be percent-decoded (`%E0`) fails in the router, before any handler of
 * its route runs: that path names nothing, so the answer is the not-found of the operation it falls under.
 */
function undecodableParamsNameNothing(operations: readonly Operation[]): ErrorRequestHandler {
  return (err, req, _res, next) => {
    const notFound =
      err instanceof URIError
        ? operations.find((op) => op.params && fallsUnder(req.path, op.path))?.params?.notFound
        : undefined;
    next(notFound === undefined ? err : new AppError(notFound));
  };
}

export function registerOperations(
  router: Router,
  operations: readonly Operation[],
  ctx: ManagementContext,
): void {
  const paths = [...new Set(operations.map((op) => op.path))];
  for (const path of paths) {
    const here = operations.filter((op) => op.path === path);
    const route = router.route(path);
    for (const operation of here) route[operation.method](...handlersOf(operation, ctx));
    route.all(methodNotAllowed(allowedMethods(here)));
  }
  router.use(undecodableParamsNameNothing(operations));
}
