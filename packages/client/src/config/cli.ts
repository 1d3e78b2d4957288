/**
 * The `tollgate` command: `apply -f FILE [--dry-run] [--prune] [--force] [--rotate-credentials]` and
 * `export [-o FILE]`, against TOLLGATE_URL with TOLLGATE_TOKEN (docs/guides/configuration-as-code.md).
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createClient } from '../management-client.js';
import { ApiCallError } from './api-call.js';
import { applyConfig } from './apply-config.js';
import { ConfigFileError } from './config-error.js';
import type { Environment } from './env-references.js';
import type { Printer } from './execute-changes.js';
import { exportConfig } from './export-config.js';
import { readState } from './read-state.js';

export const USAGE = `Usage:
  tollgate apply -f FILE [--dry-run] [--prune [--force]] [--rotate-credentials]
  tollgate export [-o FILE]
Environment: TOLLGATE_URL (the service), TOLLGATE_TOKEN (an admin token with the scopes the changes need).
Exit codes: 0 done or nothing to change, 2 --dry-run found changes, 1 refused or failed.`;

const OPTIONS = {
  file: { type: 'string', short: 'f' },
  output: { type: 'string', short: 'o' },
  'dry-run': { type: 'boolean', default: false },
  prune: { type: 'boolean', default: false },
  force: { type: 'boolean', default: false },
  'rotate-credentials': { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** Runs one command; resolves its exit code. */
export async function runTollgate(
  argv: readonly string[],
  env: Environment,
  print: Printer,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true });
  } catch (err) {
    print.err(`${(err as Error).message}\n${USAGE}`);
    return 1;
  }
  const { values, positionals } = parsed;
  const command = positionals[0];
  if (values.help) {
    print.out(USAGE);
    return 0;
  }
  if ((command !== 'apply' && command !== 'export') || positionals.length > 1) {
    print.err(USAGE);
    return 1;
  }
  if (command === 'apply' && values.file === undefined) {
    print.err(`apply needs -f FILE\n${USAGE}`);
    return 1;
  }
  const baseUrl = env.TOLLGATE_URL;
  const token = env.TOLLGATE_TOKEN;
  if (!baseUrl || !token) {
    print.err('Set TOLLGATE_URL and TOLLGATE_TOKEN.');
    return 1;
  }
  const client = createClient({ baseUrl, token });
  try {
    if (command === 'apply') {
      return await applyConfig(
        {
          file: values.file!,
          dryRun: values['dry-run'],
          prune: values.prune,
          force: values.force,
          rotateCredentials: values['rotate-credentials'],
        },
        client,
        env,
        print,
      );
    }
    const text = exportConfig(
      await readState(client),
      `${baseUrl.replace(/\/$/, '')}/tollgate/config-schema.json`,
    );
    if (values.output === undefined) print.out(text.trimEnd());
    else await writeFile(values.output, text);
    return 0;
  } catch (err) {
    if (err instanceof ConfigFileError) print.err(`Nothing changed: ${err.message}`);
    else if (err instanceof ApiCallError)
      print.err(`Nothing changed: reading the service failed: ${err.message}`);
    else print.err(`Nothing changed: ${(err as Error).message}`);
    return 1;
  }
}
