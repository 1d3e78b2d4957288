/**
 * Makes the changes one by one, printing each once it is made. A call that fails stops the run: what
 * was applied and what was not is printed, so the next apply (which starts from the service as it is
 * then) can be judged before it runs.
 */
import type { TollgateClient } from '../management-client.js';
import { describeChange, type Change } from './change.js';
import type { Environment } from './env-references.js';

export interface Printer {
  out(line: string): void;
  err(line: string): void;
}

/** Resolves true when every change was made. */
export async function executeChanges(
  changes: readonly Change[],
  client: TollgateClient,
  env: Environment,
  print: Printer,
): Promise<boolean> {
  for (const [i, change] of changes.entries()) {
    try {
      await change.run(client, env);
    } catch (err) {
      print.err(`failed: ${describeChange(change)}: ${(err as Error).message}`);
      print.err(`stopped: ${i} of ${changes.length} change(s) applied.`);
      for (const done of changes.slice(0, i)) print.err(`  applied: ${describeChange(done)}`);
      for (const rest of changes.slice(i)) print.err(`  not applied: ${describeChange(rest)}`);
      return false;
    }
    print.out(describeChange(change));
  }
  return true;
}
