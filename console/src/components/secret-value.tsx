/** A secret in a read-only field with a copy button: shown in full, or masked until revealed. */
import { useId, useRef, useState } from 'preact/hooks';
import { CopyButton } from './copy-button';

/** The prefix and the last four characters: enough to recognise a secret, not to use it. */
const maskOf = (value: string) => value.slice(0, 3) + '•'.repeat(12) + value.slice(-4);

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
    </div>
  );
}
