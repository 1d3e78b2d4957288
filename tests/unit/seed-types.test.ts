/**
 * The seed's types hold: a client generated with openapi-typescript against the
 * current OpenAPI document, written as the seed's spec reads (`usage.rateLimits` an object or null, its
 * `limit`, `remaining` and `resetTime` an integer, an integer and a timestamp), compiles.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { buildOpenApiDocument } from '../../src/management/openapi.js';
import { apiTypesText } from '../../scripts/api-types.mjs';

const CLIENT = `
import type { components } from './management-api';
type Schemas = components['schemas'];

/** What the seed's spec says a detail's summary holds. */
interface SeedSummary {
  limit?: number;
  remaining?: number;
  resetTime?: string;
}

export function summaries(key: Schemas['KeyDetailResponse'], consumer: Schemas['ConsumerDetailResponse']) {
  const ofKey: SeedSummary = {
    limit: key.usage.rateLimits?.limit,
    remaining: key.usage.rateLimits?.remaining,
    resetTime: key.usage.rateLimits?.resetTime,
  };
  const ofConsumer: SeedSummary = {
    limit: consumer.usage.rateLimits?.limit,
    remaining: consumer.usage.rateLimits?.remaining,
    resetTime: consumer.usage.rateLimits?.resetTime,
  };
  return [ofKey, ofConsumer];
}
`;

let folder: string;
beforeAll(() => (folder = mkdtempSync(join(tmpdir(), 'tollgate-seed-types-'))));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

it('compiles a client written as the seed spec reads against the generated types', async () => {
  writeFileSync(join(folder, 'management-api.ts'), await apiTypesText(buildOpenApiDocument()));
  writeFileSync(join(folder, 'client.ts'), CLIENT);
  const program = ts.createProgram([join(folder, 'client.ts')], {
    strict: true,
    exactOptionalPropertyTypes: false,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    types: [],
  });
  const errors = ts
    .getPreEmitDiagnostics(program)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  expect(errors).toEqual([]);
});
