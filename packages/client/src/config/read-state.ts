/** What the running service holds of every kind a file declares, read through the management API. */
import type { TollgateClient } from '../management-client.js';
import type { AfterApply } from './kind.js';
import { KINDS } from './kinds/index.js';

/** Per section, the objects the service holds, as its list answers show them. */
export type ServiceState = AfterApply['state'];

export async function readState(client: TollgateClient): Promise<ServiceState> {
  const lists = await Promise.all(KINDS.map((kind) => kind.list(client)));
  return new Map(KINDS.map((kind, i) => [kind.section, lists[i]!]));
}
