/**
 * ajv validators for the management requests, compiled once when this module loads, never per request.
 * Errors become the `details` of a 400 `validation_failed`: one entry per offending field.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { TSchema, Static } from '@sinclair/typebox';
import { AppError } from '../errors.js';
import {
  ApplyPlanRequest,
  CreateKeyRequest,
  CreatePlanRequest,
  ListKeysQuery,
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

function validator<S extends TSchema>(ajv: Ajv, schema: S, rootField: string): Validator<Static<S>> {
  const check: ValidateFunction = ajv.compile(schema);
  return (data) => {
    if (!check(data)) {
      const details = toDetails(check.errors ?? [], rootField);
      const summary = details.map((d) => `${d.field} ${d.message}`).join('; ');
      throw new AppError('validation_failed', `The request is not valid: ${summary}`, details);
    }
    return data as Static<S>;
  };
}

export const validateCreateKey = validator(bodyAjv, CreateKeyRequest, ROOT_FIELD);
export const validateCreatePlan = validator(bodyAjv, CreatePlanRequest, ROOT_FIELD);
export const validateApplyPlan = validator(bodyAjv, ApplyPlanRequest, ROOT_FIELD);
/**
 * Query values arrive as strings, and ajv's coercion reads them as JavaScript numbers: `1e3`, `0x10`,
 * ` 7` and `Infinity` would pass as integers. An integer parameter must be written in decimal digits.
 */
function queryValidator<S extends TSchema>(schema: S): Validator<Static<S>> {
  const check = validator(queryAjv, schema, '(query)');
  const properties = (schema as { properties?: Record<string, { type?: string }> }).properties ?? {};
  const integers = Object.keys(properties).filter((name) => properties[name]!.type === 'integer');
  return (data) => {
    const raw = data as Record<string, unknown>;
    const details: ValidationDetail[] = integers
      .filter((name) => typeof raw[name] === 'string' && !/^-?[0-9]{1,16}$/.test(raw[name]))
      .map((field) => ({ field, message: 'must be integer' }));
    if (details.length > 0) {
      const summary = details.map((d) => `${d.field} ${d.message}`).join('; ');
      throw new AppError('validation_failed', `The request is not valid: ${summary}`, details);
    }
    return check(data);
  };
}

export const validateListQuery = queryValidator(ListKeysQuery);
