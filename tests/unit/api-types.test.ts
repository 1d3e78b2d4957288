import { readFileSync } from 'node:fs';
import { ERRORS } from '../../src/errors.js';
import { buildOpenApiDocument } from '../../src/management/openapi.js';
import { API_TYPES_FILES, apiTypesText } from '../../scripts/api-types.mjs';
import { PROXY_REFUSALS_FILE, proxyRefusalsText } from '../../scripts/proxy-refusals.mjs';

// npm run build regenerates each of these; a stale copy is an answer the console or the client package
// would get wrong.
describe('generated from the server', () => {
  it.each(API_TYPES_FILES)('%s: the types of the current OpenAPI document', async (file) => {
    expect(readFileSync(file, 'utf8')).toBe(await apiTypesText(buildOpenApiDocument()));
  });

  it(`${PROXY_REFUSALS_FILE}: the statuses and messages of src/errors.ts`, () => {
    expect(readFileSync(PROXY_REFUSALS_FILE, 'utf8')).toBe(proxyRefusalsText(ERRORS));
  });
});
