/**
 * Tells "the database cannot be reached" apart from every other failure, so the management API answers
 * 503 `database_unavailable` (retry later) instead of 500 (a bug). Covers node-postgres, pg-pool and
 * Kysely, which report a lost database in different ways.
 */

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
]);

/** SQLSTATEs of a server that is going away, starting up or full (class 08 is matched as a class). */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);

const UNAVAILABLE_MESSAGES =
  /connection terminated|timeout exceeded when trying to connect|query read timeout|connection error|pool after calling end|driver has already been destroyed/i;

// Duck-typed rather than `instanceof Error`: socket errors may come from another realm (a vm context).
interface ErrorLike {
  readonly code?: unknown;
  readonly message?: unknown;
  readonly errors?: unknown;
  readonly cause?: unknown;
}

export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 5) return false;
  const { code, message, errors, cause } = err as ErrorLike;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code))
      return true;
  }
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message)) return true;
  // `connect ECONNREFUSED` to both ::1 and 127.0.0.1 arrives as an AggregateError with an empty message.
  if (Array.isArray(errors) && errors.some((e) => isDatabaseUnavailable(e, depth + 1))) return true;
  return isDatabaseUnavailable(cause, depth + 1);
}

/**
 * SQLSTATEs of a server that answers but refuses writes: out of disk or resources, read-only
 * (a standby, `default_transaction_read_only`), or failing to write its files.
 */
const REFUSING_WRITES_SQLSTATES = new Set([
  '53100', // disk_full
  '53000', // insufficient_resources
  '25006', // read_only_sql_transaction
  '58030', // io_error
]);

/** The database answers but does not take writes now: 503 `storage_unavailable`, retried later. */
export function isStorageRefusingWrites(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 5) return false;
  const { code, message, cause } = err as ErrorLike;
  if (
    typeof code === 'string' &&
    (REFUSING_WRITES_SQLSTATES.has(code) || code === 'ENOSPC' || code === 'EROFS')
  )
    return true;
  if (typeof message === 'string' && /no space left on device|read-only file system/i.test(message))
    return true;
  return isStorageRefusingWrites(cause, depth + 1);
}

/** SQLSTATE 23503: a row refers to one that no longer exists. */
export function isForeignKeyViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as ErrorLike).code === '23503';
}

/** SQLSTATE 23505: a row would repeat a value a unique constraint allows once. */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as ErrorLike).code === '23505';
}
