// Writes the server's modules that @tollgate/client ships as written (see client-copies.mjs).
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeWhole } from './lib/write-whole.mjs';
import { CLIENT_COPIES, clientCopyText } from './client-copies.mjs';

for (const { source, file } of CLIENT_COPIES) {
  mkdirSync(dirname(file), { recursive: true });
  writeWhole(file, clientCopyText(source));
}
