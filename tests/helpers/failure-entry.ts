/** A failure log entry as the recorder makes it (src/usage/failure-log.ts), for tests to vary. */
import type { FailureEntry } from '../../src/usage/failure-log.js';

export const failureEntry = (changes: Partial<FailureEntry> = {}): FailureEntry => ({
  atMs: Date.UTC(2026, 10, 22, 10, 0),
  requestId: 'r',
  consumerId: null,
  method: 'GET',
  path: '/a',
  routeId: null,
  status: 500,
  code: 'backend_error',
  limit: null,
  clientAddress: '127.0.0.1',
  customerId: null,
  durationMs: 1,
  ...changes,
});
