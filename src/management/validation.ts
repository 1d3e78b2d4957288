/**
 * ajv validators for the management requests, compiled once when this module loads, never per request.
 * Errors become the `details` of a 400 `validation_failed`: one entry per offending field.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { TSchema, Static } from '@sinclair/typebox';
import { AppError } from '../errors.js';
import { ruleOf, type LimitInput, type LimitRule } from '../limits/plan.js';
import {
  ApplyPlanRequest,
  AuditLogQuery,
  FleetUsageQuery,
  KeyUsageQuery,
  CreateAdminTokenRequest,
  CreateKeyRequest,
  CreatePlanRequest,
  DeletePlanQuery,
  ListKeysQuery,
  ListPlansQuery,
  MAX_METADATA_BYTES,
  RemovePlanRequest,
  RollKeyRequest,
  UpdateKeyRequest,
  UpdatePlanRequest,
  type ValidationDetail,
} from './schemas.js';


// allErrors: name every offending field at once, not just the first.
const bodyAjv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: false });
// Query values arrive as strings: `?limit=10` must validate as the integer 10.
const queryAjv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true });

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

function invalid(details: ValidationDetail[]): AppError {
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
    const missing = typeof data === 'object' && data !== null && !Array.isArray(data) ? required(data as Record<string, unknown>) : [];
    if (!validate(data)) throw invalid([...toDetails(validate.errors ?? [], rootField), ...missing]);
    const details = [...missing, ...check(data as Static<S>)];
    if (details.length > 0) throw invalid(details);
    return data as Static<S>;
  };
}

/** A `YYYY-MM-DDThh:mm:ssZ` the schema accepted, as an instant; undefined for a date that does not exist (02-30). */
export function parseTimestamp(text: string): Date | undefined {
  const date = new Date(text);
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 19) + 'Z' !== text ? undefined : date;
}

/** The named timestamp fields of `value` that name no real instant. */
function unrealTimestamps(value: object, fields: readonly string[]): ValidationDetail[] {
  return fields
    .filter((field) => {
      const text = (value as Record<string, unknown>)[field];
      return typeof text === 'string' && parseTimestamp(text) === undefined;
    })
    .map((field) => ({ field, message: 'is not a real date and time' }));
}

/** Timestamps that name no real instant, and metadata over its size. */
function keySettingProblems(value: { expiresAt?: string | null; metadata?: Record<string, unknown> }): ValidationDetail[] {
  const details = unrealTimestamps(value, ['expiresAt']);
  if (value.metadata !== undefined && Buffer.byteLength(JSON.stringify(value.metadata)) > MAX_METADATA_BYTES) {
    details.push({ field: 'metadata', message: `must be at most ${MAX_METADATA_BYTES} bytes as JSON` });
  }
  return details;
}

/** `create` is the path of plan creation, so no plan may be called that. */
const RESERVED_PLAN_IDS = new Set(['create']);

interface PlanLimitsInput {
  readonly limit?: number;
  readonly period?: LimitInput['period'];
  readonly limits?: readonly LimitInput[];
}

/** A new plan needs `limit` and `period`, unless it sends `limits`. */
function requiredLimitFields(body: Readonly<Record<string, unknown>>): ValidationDetail[] {
  if (body.limits !== undefined) return [];
  return ['limit', 'period'].filter((field) => body[field] === undefined).map((field) => ({ field, message: 'is required (or send limits)' }));
}

/**
 * A plan's limits as sent: `limits`, or the seed's `limit` and `period`, never both shapes; names
 * unique within the plan, and no two limits of one period and algorithm (they would count the same
 * requests in the same window, and the smaller would decide alone).
 */
function limitProblems({ limit, period, limits }: PlanLimitsInput): ValidationDetail[] {
  if (limits === undefined) return [];
  const details: ValidationDetail[] = [];
  if (limit !== undefined || period !== undefined) details.push({ field: 'limits', message: 'cannot come with limit or period' });
  const rules = limits.map(ruleOf);
  rules.forEach((rule, i) => {
    if (rules.findIndex((r) => r.name === rule.name) < i) details.push({ field: `limits.${i}.name`, message: `repeats the name "${rule.name}"` });
    if (rules.findIndex((r) => r.period === rule.period && r.algorithm === rule.algorithm) < i) {
      details.push({ field: `limits.${i}`, message: `repeats the period and algorithm of another limit (${rule.period}, ${rule.algorithm})` });
    }
  });
  return details;
}

/** The limits of a validated create body. */
export function limitsOfCreate(body: CreatePlanRequest): LimitRule[] {
  return body.limits?.map(ruleOf) ?? [ruleOf({ limit: body.limit!, period: body.period! })];
}

/**
 * The limits a validated PATCH body sets, given the plan's `current` ones; undefined when it leaves
 * them. `limit` and `period` change a plan of one limit (keeping its name when chosen, and its
 * algorithm); a plan of several takes `limits`.
 */
export function limitsOfUpdate(body: UpdatePlanRequest, current: readonly LimitRule[]): LimitRule[] | undefined {
  if (body.limits !== undefined) return body.limits.map(ruleOf);
  if (body.limit === undefined && body.period === undefined) return undefined;
  if (current.length > 1) {
    const field = body.limit !== undefined ? 'limit' : 'period';
    throw invalid([{ field, message: `applies to a plan of one limit; this plan has ${current.length}: send limits` }]);
  }
  const [only] = current as [LimitRule];
  return [ruleOf({ limit: body.limit ?? only.limit, period: body.period ?? only.period, name: only.name === only.period ? undefined : only.name, algorithm: only.algorithm })];
}

export const validateCreateKey = validator(bodyAjv, CreateKeyRequest, ROOT_FIELD, keySettingProblems);
export const validateUpdateKey = validator(bodyAjv, UpdateKeyRequest, ROOT_FIELD, keySettingProblems);
export const validateRollKey = validator(bodyAjv, RollKeyRequest, ROOT_FIELD);
export const validateCreatePlan = validator(
  bodyAjv,
  CreatePlanRequest,
  ROOT_FIELD,
  (body) => [...(RESERVED_PLAN_IDS.has(body.rateLimitId) ? [{ field: 'rateLimitId', message: `"${body.rateLimitId}" is reserved` }] : []), ...limitProblems(body)],
  requiredLimitFields,
);
export const validateUpdatePlan = validator(bodyAjv, UpdatePlanRequest, ROOT_FIELD, limitProblems);
export const validateApplyPlan = validator(bodyAjv, ApplyPlanRequest, ROOT_FIELD);
export const validateRemovePlan = validator(bodyAjv, RemovePlanRequest, ROOT_FIELD);
export const validateCreateAdminToken = validator(bodyAjv, CreateAdminTokenRequest, ROOT_FIELD, keySettingProblems);
/**
 * Query values arrive as strings, and ajv's coercion reads them as JavaScript numbers: `1e3`, `0x10`,
 * ` 7` and `Infinity` would pass as integers. An integer parameter must be written in decimal digits.
 */
function queryValidator<S extends TSchema>(schema: S, problems?: (value: Static<S>) => ValidationDetail[]): Validator<Static<S>> {
  const check = validator(queryAjv, schema, '(query)', problems);
  const properties = (schema as { properties?: Record<string, { type?: string }> }).properties ?? {};
  const integers = Object.keys(properties).filter((name) => properties[name]!.type === 'integer');
  return (data) => {
    const raw = data as Record<string, unknown>;
    const details: ValidationDetail[] = integers
      .filter((name) => typeof raw[name] === 'string' && !/^-?[0-9]{1,16}$/.test(raw[name]))
      .map((field) => ({ field, message: 'must be integer' }));
    if (details.length > 0) throw invalid(details);
    return check(data);
  };
}

export const validateListQuery = queryValidator(ListKeysQuery);
export const validateListPlansQuery = queryValidator(ListPlansQuery);
export const validateDeletePlanQuery = queryValidator(DeletePlanQuery);
export const validateAuditLogQuery = queryValidator(AuditLogQuery, (query) => unrealTimestamps(query, ['from', 'to']));
export const validateKeyUsageQuery = queryValidator(KeyUsageQuery, (query) => unrealTimestamps(query, ['from', 'to']));
export const validateFleetUsageQuery = queryValidator(FleetUsageQuery, (query) => unrealTimestamps(query, ['from', 'to']));
