/** One call `tollgate apply` makes, and how it is printed. */
import type { TollgateClient } from '../management-client.js';
import type { Environment } from './env-references.js';

export interface Change {
  readonly action: 'create' | 'update' | 'delete';
  /** `plan "gold"`, `billing export "stripe api_calls"`. */
  readonly target: string;
  /** The fields an update changes (never their values: a credential is among them); `force` for a forced delete. */
  readonly fields: readonly string[];
  /** The `${ENV_VAR}` references the call reads. */
  readonly secrets: readonly string[];
  run(client: TollgateClient, env: Environment): Promise<void>;
}

const SIGN = { create: '+', update: '~', delete: '-' } as const;

/** `~ update plan "gold": limits, costs`. */
export const describeChange = (change: Change): string =>
  `${SIGN[change.action]} ${change.action} ${change.target}` +
  (change.fields.length > 0 ? `: ${change.fields.join(', ')}` : '');
