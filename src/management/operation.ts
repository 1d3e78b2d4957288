/**
 * One management call, defined once: its method, path, scope, the schemas of its path parameters,
 * query and body, the answers it gives and the errors it may refuse with, and its handler. The Express
 * registration (validators compiled once, at first use; 405 with Allow), the scope table, the OpenAPI document
 * and the console's typed client are all derived from the list of these (resources/index.ts).
 */
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import type { Request, Response } from 'express';
import type { ErrorCode } from '../errors.js';
import type { ManagementContext } from './context.js';
import type { Scope } from './scopes.js';
import type { ValidationDetail } from './schemas.js';

export type Method = 'get' | 'post' | 'patch' | 'delete';

/** Problems a schema cannot state (a date that does not exist, a name repeated), as validation details. */
export type Check<T> = (value: T) => ValidationDetail[];

export interface BodySpec<S extends TObject> {
  readonly schema: S;
  /** Further problems of a body the schema accepted. */
  readonly check?: Check<Static<S>>;
  /** Fields missing from any object body, valid or not (a field required unless another is sent). */
  readonly required?: (body: Readonly<Record<string, unknown>>) => ValidationDetail[];
  /** The body may be left out entirely (no Content-Type, no content): read as `{}`. */
  readonly optional?: boolean;
}

export interface QuerySpec<S extends TObject> {
  readonly schema: S;
  readonly check?: Check<Static<S>>;
}

export interface ParamsSpec<S extends TObject> {
  readonly schema: S;
  /** A path value the schema refuses names nothing: answered with this code, without a query. */
  readonly notFound: ErrorCode;
}

export interface SuccessSpec {
  readonly status: 200 | 201;
  readonly description: string;
  readonly schema: TSchema;
  /** Also answers `text/csv` to a caller that prefers it. */
  readonly csv?: boolean;
  readonly headers?: Readonly<Record<string, string>>;
}

/** What one call of an operation receives: its validated inputs, and the request it came in. */
export interface OperationCall<P, Q, B> {
  readonly params: P;
  readonly query: Q;
  readonly body: B;
  readonly req: Request;
  readonly res: Response;
  readonly ctx: ManagementContext;
}

export interface Operation<
  P extends TObject = TObject,
  Q extends TObject = TObject,
  B extends TObject = TObject,
> {
  /** The OpenAPI operationId, and the console client's name for the call. */
  readonly id: string;
  readonly method: Method;
  /** Express style: `/consumer-api-key/:consumerApiKeyId`; exact, case-sensitive, no trailing slash. */
  readonly path: string;
  /** The scope a caller needs; null: any valid token (what the caller itself may do). */
  readonly scope: Scope | null;
  readonly tag: string;
  readonly summary: string;
  readonly description?: string;
  readonly params?: ParamsSpec<P>;
  readonly query?: QuerySpec<Q>;
  readonly body?: BodySpec<B>;
  readonly success: SuccessSpec;
  /**
   * The refusals this operation adds to those every operation shares (authentication, scope, method,
   * validation of what it reads, the database): each code with when it happens.
   */
  readonly errors?: Partial<Readonly<Record<ErrorCode, string>>>;
  /**
   * A POST that changes no management state: it takes a body only because what it reads must never be
   * in a URL (a secret: key lookup, verify). Not audited, documented as a read (no 503
   * `storage_unavailable`).
   */
  readonly readOnly?: true;
  /** Writes the answer. Refusals are thrown as AppError. */
  readonly handle: (call: OperationCall<Static<P>, Static<Q>, Static<B>>) => Promise<void>;
}

/** Ties an operation's handler to its own schemas' types; the list holds them as plain Operations. */
export function defineOperation<P extends TObject, Q extends TObject, B extends TObject>(
  operation: Operation<P, Q, B>,
): Operation {
  return operation as unknown as Operation;
}

/** An operation changes state unless it reads: every such call is audited and needs writable storage. */
export const isWrite = (operation: Pick<Operation, 'method' | 'readOnly'>): boolean =>
  operation.method !== 'get' && operation.readOnly !== true;
