/**
 * Rolling a key's secret: the grace its previous secret keeps working for, then the new secret, shown
 * once to copy. The console's and the portal's: each passes its own call and the longest grace it allows.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { formatTime } from '../format';
import { useAction } from '../use-api';
import { Dialog, DialogButtons } from './dialog';
import { SecretValue } from './secret-value';

const GRACE_PRESETS = [
  { seconds: 0, label: 'None: the previous secret stops working at once' },
  { seconds: 3_600, label: '1 hour' },
  { seconds: 86_400, label: '24 hours' },
  { seconds: 604_800, label: '7 days' },
] as const;

/** What a roll answers: the new secret, and until when the previous one works. */
export interface Rolled {
  readonly secret: string;
  readonly previousSecretExpiresAt: string | null;
}

/** Until when the previous secret works after a roll with `grace` seconds of grace. */
const previousSecretNote = (grace: number, rolled: Rolled) =>
  grace === 0
    ? 'The previous secret no longer works.'
    : `The previous secret keeps working until ${formatTime(rolled.previousSecretExpiresAt)}.`;

export function RollDialog({
  roll,
  maxGraceSeconds,
  onClose,
}: {
  roll: (gracePeriodSeconds: number) => Promise<Rolled>;
  maxGraceSeconds: number;
  /** With what happened, once the secret was rolled; without, when cancelled. */
  onClose: (message?: string) => void;
}) {
  const [grace, setGrace] = useState(0);
  const [rolled, setRolled] = useState<Rolled>();
  const action = useAction();
  const message = rolled && `The secret was rolled. ${previousSecretNote(grace, rolled)}`;
  const shown = useRef<HTMLDivElement>(null);
  // The form that had the focus is gone: the new secret takes it.
  useEffect(() => shown.current?.querySelector('input')?.focus(), [rolled]);
  const submit = async (event: Event) => {
    event.preventDefault();
    const result = await action.run(() => roll(grace));
    if (result) setRolled(result);
  };
  return (
    <Dialog open title="Roll the secret" onClose={() => onClose(message)}>
      {rolled ? (
        <div ref={shown}>
          <SecretValue value={rolled.secret} label="New secret (copy it now)" />
          <p>{previousSecretNote(grace, rolled)}</p>
          <div class="dialog-buttons">
            <button type="button" onClick={() => onClose(message)}>
              Done
            </button>
          </div>
        </div>
      ) : (
        <form method="dialog" onSubmit={submit}>
          <p>A new secret works at once on every replica. Usage and limits stay with the key.</p>
          <fieldset>
            <legend>The previous secret keeps working for</legend>
            {GRACE_PRESETS.filter((p) => p.seconds <= maxGraceSeconds).map((p) => (
              <label key={p.seconds} class="radio">
                <input
                  type="radio"
                  name="grace"
                  value={String(p.seconds)}
                  checked={grace === p.seconds}
                  onChange={() => setGrace(p.seconds)}
                />
                {p.label}
              </label>
            ))}
          </fieldset>
          <DialogButtons error={action.error} onCancel={() => onClose()} destructive>
            <button type="submit" disabled={action.busy}>
              Roll secret
            </button>
          </DialogButtons>
        </form>
      )}
    </Dialog>
  );
}
