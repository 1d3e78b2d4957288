/**
 * The running service as a configuration file that `tollgate apply` leaves unchanged. Consumers without
 * an `externalId` cannot be named by a file: they are counted in a comment, not exported. Credentials
 * (a billing export's, the portal's OIDC client secret) are written as `${ENV_VAR}` references (the API
 * never answers them). The portal's settings are written whole, so `apply --prune` of the file keeps them.
 */
import { stringify } from 'yaml';
import type { ConfigFile } from './config-file.js';
import { KINDS } from './kinds/index.js';
import type { ServiceState } from './read-state.js';

/** `schemaUrl`: the service's /tollgate/config-schema.json, for editors. */
export function exportConfig(state: ServiceState, schemaUrl: string): string {
  const config: Record<string, unknown> = {};
  const unnamed: string[] = [];
  for (const kind of KINDS) {
    const objects = state.get(kind.section) ?? [];
    if (kind.singleton) {
      config[kind.section] = kind.exported(objects[0]);
      continue;
    }
    const named = objects.filter((object) => kind.identityOf(object) !== undefined);
    if (named.length < objects.length) unnamed.push(`${objects.length - named.length} ${kind.section}`);
    if (named.length > 0) config[kind.section] = named.map((object) => kind.exported(object));
  }
  const header = [
    `# yaml-language-server: $schema=${schemaUrl}`,
    '# Written by `tollgate export`: `tollgate apply -f` this file changes nothing on the service it came from.',
    ...(unnamed.length > 0 ? [`# Not exported (no externalId to name them by): ${unnamed.join(', ')}.`] : []),
  ];
  return `${header.join('\n')}\n${stringify(config satisfies ConfigFile, { lineWidth: 0 })}`;
}
