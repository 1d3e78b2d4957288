// Writes the types of the management API (see api-types.mjs) from the built document.
import { writeFileSync } from 'node:fs';
import { buildOpenApiDocument } from '../dist/src/management/openapi.js';
import { API_TYPES_FILE, apiTypesText } from './api-types.mjs';

writeFileSync(API_TYPES_FILE, await apiTypesText(buildOpenApiDocument()));
