/**
 * What each scope of an admin token allows (docs/guides/admin-tokens-and-audit.md, Scopes), in the order of that
 * guide's table. Typed against the API's own list: a scope added there fails the console's
 * typecheck until it is described here.
 */
import type { AdminScope } from './types';

export const SCOPE_TEXT = {
  'keys:read': 'List and read keys and consumers, find a key by its secret',
  'keys:write': 'Create, change, roll and delete keys and consumers; bind plans to keys',
  'keys:secrets': 'Read a key’s secret on its page',
  'keys:verify': 'Verify requests for a server that cannot put Tollgate in front (POST /tollgate/verify)',
  'plans:read': 'List and read plans',
  'plans:write': 'Create, change and delete plans',
  'routes:read': 'List and read routes',
  'routes:write': 'Create, change and delete routes',
  'usage:read': 'Read usage over time: charts, top keys, CSV',
  'audit:read': 'Read the audit log',
  'tokens:write': 'List, create and revoke admin tokens (granting only scopes it holds)',
  'webhooks:read': 'List webhooks and their deliveries',
  'webhooks:write': 'Create, change and delete webhooks; send a delivery again',
  'billing:read': 'List billing exports and their runs',
  'billing:write': 'Create, change and delete billing exports; start a run',
  'portal:read': 'Read the developer portal’s settings',
  'portal:write': 'Change the developer portal’s settings (branding, public plans, sign-in)',
  'portal:sessions': 'Send customers sign-in links to the portal; list and end their sessions',
} as const satisfies Record<AdminScope, string>;

export const SCOPES = Object.keys(SCOPE_TEXT) as AdminScope[];
