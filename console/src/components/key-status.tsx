/** A key's state in words (never colour alone): active, disabled, expired. */
import type { KeySummary } from '../types';

export function keyStatus(
  key: Pick<KeySummary, 'enabled' | 'expiresAt'>,
  now = Date.now(),
): 'active' | 'disabled' | 'expired' {
  if (!key.enabled) return 'disabled';
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= now) return 'expired';
  return 'active';
}

export function KeyStatus({ keyState }: { keyState: Pick<KeySummary, 'enabled' | 'expiresAt'> }) {
  const status = keyStatus(keyState);
  return <span class={`badge badge-${status}`}>{status[0]!.toUpperCase() + status.slice(1)}</span>;
}
