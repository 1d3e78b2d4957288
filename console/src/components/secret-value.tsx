/**
 * A secret in a read-only field with a copy button: shown in full, or masked until revealed. A
 * revealed secret is masked again after a short while: a page left open on a shared screen, or
 * captured by a screen share, shows it no longer than it was needed.
 */
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { CopyButton } from './copy-button';

/** The prefix and the last four characters: enough to recognise a secret, not to use it. */
const maskOf = (value: string) => value.slice(0, 3) + '•'.repeat(12) + value.slice(-4);

/** How long a revealed secret stays on screen. */
export const REVEAL_SECONDS = 30;

export function SecretValue({
  value,
  label,
  masked = false,
}: {
  value: string;
  label: string;
  masked?: boolean;
}) {
  const [hidden, setHidden] = useState(masked);
  const input = useRef<HTMLInputElement>(null);
  const id = useId();
  useEffect(() => {
    if (!masked || hidden) return;
    const timer = setTimeout(() => setHidden(true), REVEAL_SECONDS * 1000);
    return () => clearTimeout(timer);
  }, [masked, hidden]);
  return (
    <div class="secret">
      <label for={id}>{label}</label>
      <div class="secret-row">
        <input
          id={id}
          ref={input}
          class="mono"
          readOnly
          value={hidden ? maskOf(value) : value}
          autocomplete="off"
          spellcheck={false}
        />
        {masked && (
          <button type="button" class="secondary" aria-pressed={!hidden} onClick={() => setHidden(!hidden)}>
            {hidden ? 'Reveal' : 'Hide'}
          </button>
        )}
        <CopyButton value={value} label="Copy" input={() => (hidden ? null : input.current)} />
      </div>
      {masked && !hidden && <p class="help">Masked again after {REVEAL_SECONDS} seconds.</p>}
    </div>
  );
}
