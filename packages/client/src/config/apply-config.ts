/**
 * `tollgate apply`: the file is read, its references resolved and checked against the schema, the
 * service read, and the difference planned; every fault is reported before the first change. Exit
 * codes: 0 done (or, with --dry-run, nothing to do), 2 --dry-run with changes, 1 anything refused.
 */
import type { TollgateClient } from '../management-client.js';
import { describeChange } from './change.js';
import { ConfigFileError } from './config-error.js';
import type { ConfigFile } from './config-file.js';
import { resolveReferences, type Environment } from './env-references.js';
import { executeChanges, type Printer } from './execute-changes.js';
import { loadConfig } from './load-config.js';
import { inOrder } from './order-changes.js';
import { planChanges, type PlanOptions } from './plan-changes.js';
import { readState } from './read-state.js';
import { validateConfig } from './validate-config.js';

export interface ApplyRequest extends PlanOptions {
  readonly file: string;
  readonly dryRun: boolean;
}

/**
 * The file as data the management API takes, and how to hide the values of its references in what is
 * printed; throws ConfigFileError naming every fault (by reference, never by value).
 */
export async function readConfigFile(
  file: string,
  env: Environment,
): Promise<{
  config: ConfigFile;
  lineOf: (path: readonly (string | number)[]) => number;
  hide: (text: string) => string;
}> {
  const loaded = await loadConfig(file);
  const { resolved, problems, hide } = resolveReferences(loaded.data ?? {}, env, loaded.lineOf);
  const faults = [...problems, ...validateConfig(resolved, loaded.lineOf)];
  if (faults.length > 0) throw hidden(new ConfigFileError(file, faults), hide);
  return { config: resolved as ConfigFile, lineOf: loaded.lineOf, hide };
}

/** The error, its message with the references' values hidden. */
function hidden(err: unknown, hide: (text: string) => string): unknown {
  if (err instanceof Error) err.message = hide(err.message);
  return err;
}

export async function applyConfig(
  request: ApplyRequest,
  client: TollgateClient,
  env: Environment,
  print: Printer,
): Promise<0 | 1 | 2> {
  const { config, lineOf, hide } = await readConfigFile(request.file, env);
  const shown: Printer = { out: (line) => print.out(hide(line)), err: (line) => print.err(hide(line)) };
  try {
    return await applyPlanned(request, config, lineOf, client, env, shown);
  } catch (err) {
    throw hidden(err, hide);
  }
}

async function applyPlanned(
  request: ApplyRequest,
  config: ConfigFile,
  lineOf: (path: readonly (string | number)[]) => number,
  client: TollgateClient,
  env: Environment,
  print: Printer,
): Promise<0 | 1 | 2> {
  const plan = planChanges(config, await readState(client), request, env, lineOf);
  if (plan.problems.length > 0) throw new ConfigFileError(request.file, plan.problems);
  if (plan.inUse.length > 0) {
    print.err('Nothing changed: --prune would delete what is in use (add --force to delete it anyway):');
    for (const reason of plan.inUse) print.err(`  ${reason}`);
    return 1;
  }
  const changes = inOrder(plan);
  if (changes.length === 0) {
    print.out('No changes.');
    return 0;
  }
  if (request.dryRun) {
    for (const change of changes) print.out(describeChange(change));
    print.out(`${changes.length} change(s) to apply (dry run: none made).`);
    return 2;
  }
  if (!(await executeChanges(changes, client, env, print))) return 1;
  print.out(`${changes.length} change(s) applied.`);
  return 0;
}
