/**
 * A key's expiry typed as a UTC date and time. An instant already past would refuse the key's
 * requests from the moment it is saved: the field says so, and asks for a confirmation that the form
 * requires, before anything is sent.
 */
import { useId } from 'preact/hooks';
import { utcInputToIso } from '../format';

export function ExpiryField({
  id,
  label,
  value,
  onInput,
  help,
}: {
  id: string;
  label: string;
  value: string;
  onInput: (value: string) => void;
  help?: string;
}) {
  const helpId = useId();
  const iso = utcInputToIso(value);
  const past = iso !== undefined && Date.parse(iso) <= Date.now();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        type="datetime-local"
        step="1"
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
        aria-describedby={help ? helpId : undefined}
      />
      {help && (
        <p id={helpId} class="help">
          {help}
        </p>
      )}
      {past && (
        <div class="warning" role="alert">
          <p>This instant is already past: once saved, every request with the key is refused.</p>
          <label class="checkbox">
            <input type="checkbox" required />
            Expire the key at once
          </label>
        </div>
      )}
    </div>
  );
}
