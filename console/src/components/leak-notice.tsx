/**
 * A key whose secret a scanner reported leaked (docs/guides/leaked-keys.md): when, by whom, where it
 * was found and what Tollgate did. Shown on the key in the console and, to its owner, in the portal.
 */
import { formatTime } from '../format';
import type { KeyLeak } from '../types';

const DONE: Readonly<Record<KeyLeak['action'], string>> = {
  disable: 'The key was disabled: its requests are refused until it is enabled again.',
  roll: 'The key was given a new secret: the leaked one is refused.',
  notify: 'Nothing was changed: the leaked secret still works until the key is rolled or disabled.',
};

export function LeakNotice({ leak }: { leak: KeyLeak }) {
  return (
    <div class="warning" role="status" aria-label="Leaked secret">
      <p>This key’s secret was reported leaked</p>
      <div>
        {formatTime(leak.at)}, reported by {leak.source === 'github' ? 'GitHub secret scanning' : leak.source}
        {leak.url !== null && (
          <>
            {', found at '}
            <a href={leak.url} rel="noopener noreferrer" target="_blank">
              {leak.url}
            </a>
          </>
        )}
        . {DONE[leak.action]}
      </div>
    </div>
  );
}
