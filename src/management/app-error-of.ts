/** What a failed management call answers: the AppError of any failure, logged as its kind deserves. */
import { AppError } from '../errors.js';
import type { ManagementDeps } from './context.js';
import { isDatabaseUnavailable, isForeignKeyViolation, isStorageRefusingWrites } from './db-errors.js';

export function appErrorOf(
  err: unknown,
  deps: Pick<ManagementDeps, 'logger' | 'storageHealth'>,
  method: string,
  path: string,
): AppError {
  if (err instanceof AppError) return err;
  // The only foreign key a management write can break: a plan deleted while it was being bound (to a
  // key or a consumer). A consumer being given a key is held (key share) until the key is stored.
  if (isForeignKeyViolation(err)) return new AppError('rate_limit_not_found');
  if (isDatabaseUnavailable(err)) {
    deps.logger.warn({ err: (err as Error).message, method, path }, 'database unavailable');
    return new AppError('database_unavailable');
  }
  if (isStorageRefusingWrites(err)) {
    deps.logger.warn({ err: (err as Error).message, method, path }, 'database refuses writes');
    deps.storageHealth?.refused((err as Error).message);
    return new AppError('storage_unavailable');
  }
  deps.logger.error({ err, method, path }, 'management request failed');
  return new AppError('internal_error');
}
