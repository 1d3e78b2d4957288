#!/usr/bin/env node
/** The `tollgate` command installed with @tollgate/client (src/config/cli.ts). */
import { runTollgate } from '../config/cli.js';

process.exitCode = await runTollgate(process.argv.slice(2), process.env, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
