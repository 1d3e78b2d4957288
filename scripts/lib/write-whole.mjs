// Writes a file the build generates into the source tree so that a reader at the same moment (.ci/run
// type-checks beside the build) sees the old content or the new, never a file cut short: the text
// goes to a temporary file beside it, which then takes the file's name in one rename.
import { renameSync, writeFileSync } from 'node:fs';

export function writeWhole(file, text) {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}
