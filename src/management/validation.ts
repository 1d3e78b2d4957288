/**
 * ajv validators for the management requests, compiled once per operation at start-up, never per
 * request. Errors become the `details` of a 400 `validation_failed`: one entry per offending field.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import { AppError } from '../errors.js';
import { countsOwnRequests, ruleOf, type CostRule, type LimitInput, type LimitRule } from '../plans/plan.js';
import type { RequestMatch } from '../plans/request-match.js';
import { hasDotSegment } from '../proxy/request-target.js';
import type { CreditsInput } from './credit-schemas.js';
import type { BodySpec, Check as CheckOf, ParamsSpec, QuerySpec } from './operation.js';
import {
  MAX_METADATA_BYTES,
  MAX_METADATA_DEPTH,
  type CreatePlanRequest,
  type UpdatePlanRequest,
  type ValidationDetail,
} from './schemas.js';

// allErrors: name every offending field at once, not just the first.
const bodyAjv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: false });
// Query values arrive as strings: `?limit=10` must validate as the integer 10.
const queryAjv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true });
const paramsAjv = new Ajv({ allErrors: false, coerceTypes: false });

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
  const validate: ValidateFunction = ajv.compile(schema);
  return (data) => {
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

/** A day of the month given to a daily refill, which has none. */
function creditProblems(credits: CreditsInput | undefined): ValidationDetail[] {
  const refill = credits?.refill;
  if (refill?.interval === 'day' && refill.dayOfMonth !== undefined)
    return [{ field: 'credits.refill.dayOfMonth', message: 'applies to a monthly refill only' }];
  return [];
}

/** Timestamps that name no real instant, metadata over its bounds, and credits that do not hold together. */
export function keySettingProblems(value: {
  expiresAt?: string | null;
  metadata?: Record<string, unknown> | null;
  credits?: CreditsInput;
}): ValidationDetail[] {
  return [
    ...unrealTimestamps(value, ['expiresAt']),
    ...metadataProblems(value.metadata),
    ...creditProblems(value.credits),
  ];
}

/** Metadata and credits, checked as a key's. */
export const consumerSettingProblems = (value: {
  metadata?: Record<string, unknown> | null;
  credits?: CreditsInput;
}): ValidationDetail[] => [...metadataProblems(value.metadata), ...creditProblems(value.credits)];

/** A query's `from` and `to`: real instants. */
export const rangeProblems = (query: { from?: string; to?: string }): ValidationDetail[] =>
  unrealTimestamps(query, ['from', 'to']);

/** `create` is the path of plan creation, so no plan may be called that. */
const RESERVED_PLAN_IDS = new Set(['create']);

/** A new plan: not under a reserved id, and its limits well formed. */
export function createPlanProblems(body: CreatePlanRequest): ValidationDetail[] {
  return [
    ...(RESERVED_PLAN_IDS.has(body.rateLimitId)
      ? [{ field: 'rateLimitId', message: `"${body.rateLimitId}" is reserved` }]
      : []),
    ...updatePlanProblems(body),
  ];
}

/** A plan's limits and costs as sent. */
export const updatePlanProblems = (body: UpdatePlanRequest): ValidationDetail[] => [
  ...limitProblems(body),
  ...costProblems(body),
];

interface PlanLimitsInput {
  readonly limit?: number;
  readonly period?: LimitInput['period'];
  readonly limits?: readonly LimitInput[];
}

/** A new plan needs `limit` and `period`, unless it sends `limits`. */
export function requiredLimitFields(body: Readonly<Record<string, unknown>>): ValidationDetail[] {
  if (body.limits !== undefined) return [];
  return ['limit', 'period']
    .filter((field) => body[field] === undefined)
    .map((field) => ({ field, message: 'is required (or send limits)' }));
}

/**
 * A plan's limits as sent: `limits`, or the seed's `limit` and `period`, never both shapes; names
 * unique within the plan, and no two limits without a match of one period and algorithm (they would
 * count the same requests in the same window, and the smaller would decide alone).
 */
export function limitProblems({ limit, period, limits }: PlanLimitsInput): ValidationDetail[] {
  if (limits === undefined) return [];
  const details: ValidationDetail[] = [];
  if (limit !== undefined || period !== undefined)
    details.push({ field: 'limits', message: 'cannot come with limit or period' });
  const rules = limits.map(ruleOf);
  rules.forEach((rule, i) => {
    if (rules.findIndex((r) => r.name === rule.name) < i)
      details.push({ field: `limits.${i}.name`, message: `repeats the name "${rule.name}"` });
    const sameKind = (r: LimitRule) =>
      !countsOwnRequests(r) && r.period === rule.period && r.algorithm === rule.algorithm;
    if (!countsOwnRequests(rule) && rules.findIndex(sameKind) < i) {
      details.push({
        field: `limits.${i}`,
        message: `repeats the period and algorithm of another limit without a match (${rule.period}, ${rule.algorithm})`,
      });
    }
    details.push(...matchProblems(rule.match, `limits.${i}.match`));
  });
  return details;
}

/**
 * A match's path prefix without a dot segment, as a route's (the proxy refuses such request paths);
 * `caseInsensitive` only beside the prefix it qualifies.
 */
export function matchProblems(match: RequestMatch | undefined, field: string): ValidationDetail[] {
  if (match?.pathPrefix === undefined)
    return match?.caseInsensitive === undefined
      ? []
      : [{ field: `${field}.caseInsensitive`, message: 'needs a pathPrefix: it says how that is compared' }];
  return hasDotSegment(match.pathPrefix)
    ? [{ field: `${field}.pathPrefix`, message: 'must not contain a . or .. segment' }]
    : [];
}

/** A plan's costs as sent: their matches well formed. */
export const costProblems = ({ costs }: { costs?: readonly CostRule[] }): ValidationDetail[] =>
  (costs ?? []).flatMap((rule, i) => matchProblems(rule.match, `costs.${i}.match`));

/** The limits of a validated create body. */
export function limitsOfCreate(body: CreatePlanRequest): LimitRule[] {
  return body.limits?.map(ruleOf) ?? [ruleOf({ limit: body.limit!, period: body.period! })];
}

/**
 * The limits a validated PATCH body sets, given the plan's `current` ones; undefined when it leaves
 * them. `limit` and `period` change a plan of one limit (keeping its name when chosen, and its
 * algorithm); a plan of several takes `limits`.
 */
export function limitsOfUpdate(
  body: UpdatePlanRequest,
  current: readonly LimitRule[],
): LimitRule[] | undefined {
  if (body.limits !== undefined) return body.limits.map(ruleOf);
  if (body.limit === undefined && body.period === undefined) return undefined;
  if (current.length > 1) {
    const field = body.limit !== undefined ? 'limit' : 'period';
    throw invalid([
      { field, message: `applies to a plan of one limit; this plan has ${current.length}: send limits` },
    ]);
  }
  const [only] = current as [LimitRule];
  return [
    ruleOf({
      limit: body.limit ?? only.limit,
      period: body.period ?? only.period,
      name: only.name === only.period ? undefined : only.name,
      algorithm: only.algorithm,
    }),
  ];
}

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
  const validate = paramsAjv.compile(spec.schema);
  return (data) => {
    if (!validate(data)) throw new AppError(spec.notFound);
    return data;
  };
}
