// Writes the server's modules that @tollgate/client ships as written (see client-copies.mjs).
import { writeWhole } from './lib/write-whole.mjs';
import { CLIENT_COPIES, clientCopyText } from './client-copies.mjs';

for (const { source, file } of CLIENT_COPIES) writeWhole(file, clientCopyText(source));
