/**
 * Who disabled a key decides who may enable it (docs/decisions/0150-portal-administrators-decide.md): a portal user enables only a key they disabled
 * themselves; an administrator enables or disables any key, and their disabling is theirs from then on.
 */
import { AppError } from '../../../errors.js';
import type { KeyRow, KeySettings } from '../../../store/key-row.js';

/**
 * `changes` with who disables, for a caller that is a portal user (`byPortal`) or an administrator,
 * read against the key as it is inside the change's transaction. Throws 403 disabled_by_administrator
 * when a portal user enables a key an administrator disabled.
 */
export function withWhoDisabled(
  before: KeyRow,
  changes: Partial<KeySettings>,
  byPortal: boolean,
): Partial<KeySettings> {
  if (changes.enabled === undefined) return changes;
  if (changes.enabled) {
    if (byPortal && !before.enabled && !before.disabledInPortal)
      throw new AppError('disabled_by_administrator');
    return { ...changes, disabledInPortal: false };
  }
  // A portal user disabling a key already disabled leaves it the administrator's, if it was.
  if (byPortal && !before.enabled) return changes;
  return { ...changes, disabledInPortal: byPortal };
}
