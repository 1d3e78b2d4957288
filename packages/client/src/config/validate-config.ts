/**
 * Checks a file against packages/client/config-schema.json (the create bodies of the management API),
 * against what the API checks beyond its schema (the shape of a plan's limits and costs, a refill's day: the
 * server's own code, generated/limit-shape.ts), and that no two items of a section share an identity
 * (webhooks excepted: two may share a URL); each fault with its line and field.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { ConfigProblem } from './config-error.js';
import { fieldName, type ConfigFile, type FieldPath, type ListSection } from './config-file.js';
import {
  costShapeProblems,
  limitShapeProblems,
  planLimitFieldProblems,
  refillShapeProblems,
  repeatedKindProblems,
  repeatedNameProblems,
  type ShapeProblem,
} from '../generated/limit-shape.js';

/** The schema ships beside dist/ and src/ alike, two folders above this file. */
export const CONFIG_SCHEMA = JSON.parse(
  readFileSync(new URL('../../config-schema.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

/**
 * Compiled at the first file checked, not when the command starts (`--help`, `export` check none), and
 * without ajv's check of the schema against the JSON Schema meta-schema, which cost more than the
 * compile itself at each start: tests/unit/config-file.test.ts checks the committed schema instead.
 */
let compiled: ValidateFunction | undefined;

/** What the schema finds wrong with `data`: nothing when it holds. */
function schemaErrors(data: unknown): readonly ErrorObject[] {
  compiled ??= new Ajv({ allErrors: true, strict: false, validateSchema: false }).compile(CONFIG_SCHEMA);
  return compiled(data) ? [] : (compiled.errors ?? []);
}

function pathOf(error: ErrorObject): FieldPath {
  const path: (string | number)[] = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
  if (error.keyword === 'required') path.push(String(error.params.missingProperty));
  if (error.keyword === 'additionalProperties') path.push(String(error.params.additionalProperty));
  return path;
}

function messageOf(error: ErrorObject): string {
  if (error.keyword === 'required') return 'is required';
  if (error.keyword === 'additionalProperties') return 'is not a known field';
  if (error.keyword === 'enum')
    return `must be one of ${(error.params.allowedValues as unknown[]).join(', ')}`;
  return error.message ?? 'is invalid';
}

/** What identifies an item of each list in the running service, webhooks excepted (kinds/webhooks.ts). */
export const IDENTITY: Readonly<
  Record<Exclude<ListSection, 'webhooks'>, { fields: readonly string[]; of(item: never): string }>
> = {
  plans: { fields: ['rateLimitId'], of: (item: { rateLimitId: string }) => item.rateLimitId },
  routes: { fields: ['routeId'], of: (item: { routeId: string }) => item.routeId },
  consumers: { fields: ['externalId'], of: (item: { externalId: string }) => item.externalId },
  billingExports: {
    fields: ['type', 'eventName'],
    of: (item: { type: string; eventName: string }) => `${item.type} ${item.eventName}`,
  },
};

function duplicates(config: ConfigFile, lineOf: (path: FieldPath) => number): ConfigProblem[] {
  return (Object.keys(IDENTITY) as (keyof typeof IDENTITY)[]).flatMap((section) => {
    const identity = IDENTITY[section];
    const seen = new Map<string, number>();
    return (config[section] ?? []).flatMap((item, i) => {
      const id = identity.of(item as never);
      const first = seen.get(id);
      if (first === undefined) {
        seen.set(id, i);
        return [];
      }
      const path = [section, i, identity.fields[0]!];
      return [
        { line: lineOf(path), field: fieldName(path), message: `repeats ${section}[${first}] ("${id}")` },
      ];
    });
  });
}

/** What the API refuses beyond its schema, found in the file before any change. */
function shapeProblems(config: ConfigFile, lineOf: (path: FieldPath) => number): ConfigProblem[] {
  const at = (base: FieldPath, problems: readonly ShapeProblem[]) =>
    problems.map(({ path, message }) => {
      const field = [...base, ...path];
      return { line: lineOf(field), field: fieldName(field), message };
    });
  const plans = (config.plans ?? []).flatMap((plan, i) => [
    ...at(['plans', i], planLimitFieldProblems(plan)),
    ...(plan.limits ?? []).flatMap((limit, j) => at(['plans', i, 'limits', j], limitShapeProblems(limit))),
    ...at(['plans', i, 'limits'], repeatedNameProblems(plan.limits ?? [])),
    ...at(['plans', i, 'limits'], repeatedKindProblems(plan.limits ?? [])),
    ...(plan.costs ?? []).flatMap((cost, j) => at(['plans', i, 'costs', j], costShapeProblems(cost))),
  ]);
  const refills = (config.consumers ?? []).flatMap((consumer, i) =>
    at(['consumers', i, 'credits', 'refill'], refillShapeProblems(consumer.credits?.refill)),
  );
  return [...plans, ...refills];
}

/** The faults of `data` (resolved), one per field, in the file's order; none: it is a ConfigFile. */
export function validateConfig(data: unknown, lineOf: (path: FieldPath) => number): ConfigProblem[] {
  const errors = schemaErrors(data);
  if (errors.length > 0) {
    const seen = new Set<string>();
    const problems = errors.flatMap((error) => {
      const path = pathOf(error);
      const problem = { line: lineOf(path), field: fieldName(path), message: messageOf(error) };
      const key = `${problem.field}\0${problem.message}`;
      if (seen.has(key)) return [];
      seen.add(key);
      return [problem];
    });
    return problems.sort((a, b) => a.line - b.line);
  }
  const config = data as ConfigFile;
  return [...shapeProblems(config, lineOf), ...duplicates(config, lineOf)].sort((a, b) => a.line - b.line);
}
