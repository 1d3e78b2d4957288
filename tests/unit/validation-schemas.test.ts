/**
 * Every management operation's request schemas compile with the validators' own ajv settings
 * (src/management/validation.ts compiles each at its operation's first request, not at start-up): a
 * schema ajv refuses fails here, not as a 500 on the first call that reaches it. Validating an empty
 * value compiles the schema; a refusal of that value is a 400 or a 404 (an AppError), a schema ajv
 * cannot compile a plain Error. The validators do not check their schemas against JSON Schema's
 * meta-schema (it would cost each process that compile): this file does, for every one.
 */
import { Ajv } from 'ajv';
import { AppError } from '../../src/errors.js';
import { OPERATIONS } from '../../src/management/resources/index.js';
import { bodyValidator, paramsValidator, queryValidator } from '../../src/management/validation.js';

/** What validating `{}` ended with: accepted, or the code of the AppError it threw. */
function outcome(validate: (data: unknown) => unknown): string {
  try {
    validate({});
    return 'accepted';
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}

/** ajv's own settings, which check a schema against JSON Schema's meta-schema. */
const metaSchema = new Ajv();

describe.each(OPERATIONS.map((operation) => [operation.id, operation] as const))('%s', (_, operation) => {
  it('compiles its path parameters, query and body schemas', () => {
    const outcomes = [
      operation.params && outcome(paramsValidator(operation.params)),
      operation.query && outcome(queryValidator(operation.query)),
      operation.body && outcome(bodyValidator(operation.body)),
    ];
    for (const seen of outcomes.filter((o) => o !== undefined))
      expect(['accepted', 'validation_failed', 'invalid_cursor', operation.params?.notFound]).toContain(seen);
  });

  it('writes its schemas as JSON Schema allows', () => {
    const schemas = [operation.params, operation.query, operation.body].flatMap((spec) => spec?.schema ?? []);
    const problems = schemas.flatMap((schema) =>
      metaSchema.validateSchema(schema) ? [] : metaSchema.errors,
    );
    expect(problems).toEqual([]);
  });
});
