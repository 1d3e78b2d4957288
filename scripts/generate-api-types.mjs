// Writes the types of the management API (see api-types.mjs) from the built document, once per output.
import { writeFileSync } from 'node:fs';
import { buildOpenApiDocument } from '../dist/src/management/openapi.js';
import { API_TYPES_FILES, apiTypesText } from './api-types.mjs';

const text = await apiTypesText(buildOpenApiDocument());
for (const file of API_TYPES_FILES) writeFileSync(file, text);
