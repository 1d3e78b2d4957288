/** The refusals an operation may give and when each happens, as the OpenAPI document tells them. */
import type { ErrorCode } from '../errors.js';
import { MAX_BODY_BYTES } from './json-body.js';
import { isWrite, type Operation } from './operation.js';

/** When each refusal every operation may give happens. */
const SHARED_REASONS: Partial<Record<ErrorCode, string>> = {
  unauthorized: 'Missing or wrong token',
  insufficient_scope: 'The token lacks the scope this operation needs',
  too_many_failed_attempts: 'Too many wrong credentials from this client address',
  method_not_allowed: 'Known route, other method',
  database_unavailable: 'The database is unavailable; retry later',
  storage_unavailable: 'The database refuses writes (disk full, read-only); retry later',
  internal_error: 'Unexpected server error',
};
const BODY_REASONS: Partial<Record<ErrorCode, string>> = {
  validation_failed: 'A body (or parameter) that does not match the schema: `details` names each field',
  invalid_json: 'Malformed or empty JSON',
  payload_too_large: `Body larger than ${MAX_BODY_BYTES} bytes`,
  unsupported_media_type: 'Body is not application/json (or is compressed)',
};
const QUERY_REASONS: Partial<Record<ErrorCode, string>> = {
  validation_failed:
    'A query parameter that does not match its schema, or an unknown one: `details` names each',
};

/** Every refusal an operation may give, with when: shared, from what it reads, and its own. */
export function reasonsOf(operation: Operation): Map<ErrorCode, string> {
  const reasons = new Map<ErrorCode, string>();
  const add = (more: Partial<Record<ErrorCode, string>>) => {
    for (const [code, reason] of Object.entries(more) as [ErrorCode, string][])
      reasons.set(code, reasons.has(code) ? `${reasons.get(code)}; ${reason}` : reason);
  };
  // A scope is refused only where one is needed; storage refusing writes only where one is made.
  const { storage_unavailable: writes, insufficient_scope: scoped, ...anyCall } = SHARED_REASONS;
  add({
    ...anyCall,
    ...(operation.scope !== null && { insufficient_scope: scoped }),
    ...(isWrite(operation) && { storage_unavailable: writes }),
  });
  if (operation.body) add(BODY_REASONS);
  if (operation.query && !operation.body) add(QUERY_REASONS);
  if (operation.query?.schema.properties.cursor)
    add({ invalid_cursor: 'A `cursor` this service did not issue' });
  if (operation.params && !operation.errors?.[operation.params.notFound])
    add({ [operation.params.notFound]: 'The path names nothing' });
  if (operation.errors) add(operation.errors);
  return reasons;
}
