// Writes a file the build generates into the source tree so that a reader at the same moment (.ci/run
// type-checks beside the build) sees the old content or the new, never a file cut short: the text
// goes to a temporary file beside it, which then takes the file's name in one rename.
// A file whose content is already the text is left as it is, its time too: what is built from it is not
// rebuilt (scripts/ensure-client-built.mjs).
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

export function writeWhole(file, text) {
  if (existsSync(file) && readFileSync(file, 'utf8') === text) return;
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}
