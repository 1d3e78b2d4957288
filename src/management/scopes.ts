/** What an admin token may do (contract section 9). The root token holds every scope. */
export const SCOPES = ['keys:read', 'keys:write', 'plans:read', 'plans:write', 'usage:read', 'audit:read', 'tokens:write'] as const;

export type Scope = (typeof SCOPES)[number];
