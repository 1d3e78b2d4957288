/**
 * ajv validators for the management requests, each compiled once, at its operation's first request,
 * never per request: a start compiles none (a process that serves a few operations compiles only
 * theirs), and tests/unit/validation-schemas.test.ts compiles every one. Errors become the `details`
 * of a 400 `validation_failed`: one entry per offending field.
 */
import { parseAddressBlock } from '../net/address-blocks.js';
import { refillShapeProblems } from '../plans/limit-shape.js';
import { spansPublicSuffix } from '../plans/origins.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import { AppError } from '../errors.js';
import type { CreditsUpdate } from './resources/credits/balance-schemas.js';
import type { BodySpec, Check as CheckOf, ParamsSpec, QuerySpec } from './operation.js';
import { MAX_METADATA_BYTES, MAX_METADATA_DEPTH, type ValidationDetail } from './schemas.js';

// validateSchema off: ajv would otherwise compile the JSON Schema meta-schema in each instance, at its
// first compile, to check schemas that are ours and fixed; tests/unit/validation-schemas.test.ts checks
// every one of them against it instead (docs/performance.md, "Suite").
const OWN_SCHEMAS = { validateSchema: false } as const;
// allErrors: name every offending field at once, not just the first.
const bodyAjv = new Ajv({ ...OWN_SCHEMAS, allErrors: true, useDefaults: true, coerceTypes: false });
// Query values arrive as strings: `?limit=10` must validate as the integer 10.
const queryAjv = new Ajv({ ...OWN_SCHEMAS, allErrors: true, useDefaults: true, coerceTypes: true });
const paramsAjv = new Ajv({ ...OWN_SCHEMAS, allErrors: false, coerceTypes: false });

const ROOT_FIELD = '(body)';

function join(path: string, property: unknown): string {
  return path === '' ? String(property) : `${path}.${String(property)}`;
}

function toDetails(errors: readonly ErrorObject[], rootField: string): ValidationDetail[] {
  const details: ValidationDetail[] = [];
  for (const e of errors) {
    const path = e.instancePath.split('/').slice(1).join('.');
    let detail: ValidationDetail;
    if (e.keyword === 'required')
      detail = { field: join(path, e.params.missingProperty), message: 'is required' };
    else if (e.keyword === 'additionalProperties')
      detail = { field: join(path, e.params.additionalProperty), message: 'is not an accepted field' };
    else detail = { field: path === '' ? rootField : path, message: e.message ?? 'is not valid' };
    if (!details.some((d) => d.field === detail.field && d.message === detail.message)) details.push(detail);
  }
  return details;
}

type Validator<T> = (data: unknown) => T;
/** A check of an operation, applied to the value its schema accepted. */
type Check = CheckOf<unknown>;

/** 400 `validation_failed` naming each offending field. */
export function invalid(details: ValidationDetail[]): AppError {
  const summary = details.map((d) => `${d.field} ${d.message}`).join('; ');
  return new AppError('validation_failed', `The request is not valid: ${summary}`, details);
}

/**
 * Checks the schema, then what a schema cannot say: `check` returns the further offending fields of a
 * value the schema accepted, `required` the fields missing from any object, valid or not (a field
 * required unless another is sent). Every problem of a request is named at once, schema or not.
 */
function validator<S extends TSchema>(
  ajv: Ajv,
  schema: S,
  rootField: string,
  check: (value: Static<S>) => ValidationDetail[] = () => [],
  required: (value: Readonly<Record<string, unknown>>) => ValidationDetail[] = () => [],
): Validator<Static<S>> {
  let validate: ValidateFunction | undefined;
  return (data) => {
    validate ??= ajv.compile(schema);
    const missing =
      typeof data === 'object' && data !== null && !Array.isArray(data)
        ? required(data as Record<string, unknown>)
        : [];
    if (!validate(data)) throw invalid([...toDetails(validate.errors ?? [], rootField), ...missing]);
    const details = [...missing, ...check(data as Static<S>)];
    if (details.length > 0) throw invalid(details);
    return data as Static<S>;
  };
}

/**
 * A `YYYY-MM-DDThh:mm:ssZ` the schema accepted (a fraction of a second, as toISOString() writes it, is
 * cut off), as an instant; undefined for a date that does not exist (02-30).
 */
export function parseTimestamp(text: string): Date | undefined {
  const whole = text.replace(/\.[0-9]{1,9}Z$/, 'Z');
  const date = new Date(whole);
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 19) + 'Z' !== whole ? undefined : date;
}

/** The named timestamp fields of `value` that name no real instant. */
export function unrealTimestamps(value: object, fields: readonly string[]): ValidationDetail[] {
  return fields
    .filter((field) => {
      const text = (value as Record<string, unknown>)[field];
      return typeof text === 'string' && parseTimestamp(text) === undefined;
    })
    .map((field) => ({ field, message: 'is not a real date and time' }));
}

/** Whether `value` nests objects and arrays deeper than `limit`; iterative, so any depth costs no stack. */
function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: [unknown, number][] = [[value, 1]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return false;
}

/** Metadata deeper than its bound or larger than its size (checked in that order: size needs a walk). */
function metadataProblems(metadata: unknown): ValidationDetail[] {
  if (metadata === undefined || metadata === null) return [];
  if (nestsDeeperThan(metadata, MAX_METADATA_DEPTH))
    return [{ field: 'metadata', message: `must nest at most ${MAX_METADATA_DEPTH} levels deep` }];
  if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES)
    return [{ field: 'metadata', message: `must be at most ${MAX_METADATA_BYTES} bytes as JSON` }];
  return [];
}

/** A day of the month given to a daily refill, which has none (plans/limit-shape.ts). */
const creditProblems = (credits: CreditsUpdate | undefined): ValidationDetail[] =>
  refillShapeProblems(credits?.refill).map(({ path, message }) => ({
    field: ['credits.refill', ...path].join('.'),
    message,
  }));

/**
 * Timestamps that name no real instant, metadata over its bounds, credits that do not hold together,
 * addresses that are none, and origins over a public suffix.
 */
export function keySettingProblems(value: {
  expiresAt?: string | null;
  metadata?: Record<string, unknown> | null;
  credits?: CreditsUpdate;
  allowedAddresses?: string[] | null;
  allowedOrigins?: string[] | null;
}): ValidationDetail[] {
  return [
    ...unrealTimestamps(value, ['expiresAt']),
    ...metadataProblems(value.metadata),
    ...creditProblems(value.credits),
    ...addressProblems(value.allowedAddresses),
    ...originProblems(value.allowedOrigins, 'allowedOrigins'),
  ];
}

/** Each of a key's `allowedAddresses` an IPv4 or IPv6 address or CIDR block. */
const addressProblems = (addresses: string[] | null | undefined): ValidationDetail[] =>
  (addresses ?? []).flatMap((address, i) =>
    parseAddressBlock(address) === undefined
      ? [
          {
            field: `allowedAddresses[${i}]`,
            message:
              'must be an IPv4 or IPv6 address, or a CIDR block such as 203.0.113.0/24 or 2001:db8::/32',
          },
        ]
      : [],
  );

/** Each origin of `origins` whose wildcard spans a public suffix (`https://*.co.uk`). */
export const originProblems = (
  origins: readonly string[] | null | undefined,
  field: string,
): ValidationDetail[] =>
  (origins ?? []).flatMap((origin, i) =>
    spansPublicSuffix(origin)
      ? [
          {
            field: `${field}[${i}]`,
            message: 'must not be a wildcard over a public suffix (any site may be registered under it)',
          },
        ]
      : [],
  );

/** Metadata and credits, checked as a key's. */
export const consumerSettingProblems = (value: {
  metadata?: Record<string, unknown> | null;
  credits?: CreditsUpdate;
}): ValidationDetail[] => [...metadataProblems(value.metadata), ...creditProblems(value.credits)];

/** A query's `from` and `to`: real instants. */
export const rangeProblems = (query: { from?: string; to?: string }): ValidationDetail[] =>
  unrealTimestamps(query, ['from', 'to']);

/** The body validator of an operation: the schema, then its further checks. */
export function bodyValidator(spec: BodySpec<TObject>): Validator<unknown> {
  return validator(bodyAjv, spec.schema as TSchema, ROOT_FIELD, spec.check as Check, spec.required);
}

/**
 * The query validator of an operation. Query values arrive as strings, and ajv's coercion reads them
 * as JavaScript numbers: `1e3`, `0x10`, ` 7` and `Infinity` would pass as integers, so an integer
 * parameter must be written in decimal digits. Errors about `cursor` alone are `invalid_cursor`.
 */
export function queryValidator(spec: QuerySpec<TObject>): Validator<unknown> {
  const check = validator(queryAjv, spec.schema as TSchema, '(query)', spec.check as Check);
  const properties = spec.schema.properties as Record<string, { type?: string }>;
  const integers = Object.keys(properties).filter((name) => properties[name]!.type === 'integer');
  return (data) => {
    const raw = { ...(data as Record<string, unknown>) };
    const details: ValidationDetail[] = integers
      .filter((name) => typeof raw[name] === 'string' && !/^-?[0-9]{1,16}$/.test(raw[name]))
      .map((field) => ({ field, message: 'must be integer' }));
    if (details.length > 0) throw invalid(details);
    try {
      return check(raw);
    } catch (err) {
      if (err instanceof AppError && err.details?.every((d) => (d as ValidationDetail).field === 'cursor'))
        throw new AppError('invalid_cursor');
      throw err;
    }
  };
}

/** The path parameter validator of an operation: a value the schema refuses names nothing. */
export function paramsValidator(spec: ParamsSpec<TObject>): Validator<unknown> {
  let validate: ValidateFunction | undefined;
  return (data) => {
    validate ??= paramsAjv.compile(spec.schema);
    if (!validate(data)) throw new AppError(spec.notFound);
    return data;
  };
}
