// Writes packages/client/config-schema.json, the JSON Schema of `tollgate apply` files, from the built
// server (src/management/config-schema.ts): what @tollgate/client validates with and ships.
import { writeWhole } from './lib/write-whole.mjs';
import { buildConfigSchema } from '../dist/src/management/config-schema.js';

writeWhole('packages/client/config-schema.json', `${JSON.stringify(buildConfigSchema(), null, 2)}\n`);
