// Writes the types of the management API (see api-types.mjs) from the built document.
import { writeWhole } from './lib/write-whole.mjs';
import { buildOpenApiDocument } from '../dist/src/management/openapi.js';
import { API_TYPES_FILE, apiTypesText } from './api-types.mjs';

writeWhole(API_TYPES_FILE, await apiTypesText(buildOpenApiDocument()));
