/**
 * "Mint a token…" on a key's page: how long the token works, then the token, shown once to copy. It
 * is the key, narrowed to that time: sent as the key is, counted and limited as the key.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Dialog, DialogButtons } from '../../../console/src/components/dialog';
import { SecretValue } from '../../../console/src/components/secret-value';
import { formatTime } from '../../../console/src/format';
import { useAction } from '../../../console/src/use-api';
import { mintToken, TOKEN_LIFETIMES } from '../mint-token';
import type { MintedToken } from '../portal-types';

export function MintTokenDialog({ keyId, onClose }: { keyId: string; onClose: () => void }) {
  const [seconds, setSeconds] = useState<number>(3_600);
  const [minted, setMinted] = useState<MintedToken>();
  const action = useAction();
  const shown = useRef<HTMLDivElement>(null);
  // The form that had the focus is gone: the token takes it.
  useEffect(() => shown.current?.querySelector('input')?.focus(), [minted]);
  const submit = async (event: Event) => {
    event.preventDefault();
    const result = await action.run(() => mintToken(keyId, seconds));
    if (result) setMinted(result);
  };
  return (
    <Dialog open title="Mint a token" onClose={onClose}>
      {minted ? (
        <div ref={shown}>
          <SecretValue value={minted.token} label="Token (copy it now)" />
          <p>
            It works like the key until {formatTime(minted.expiresAt)}: send it in{' '}
            <code>Authorization: Bearer</code>. It is shown only now.
          </p>
          <div class="dialog-buttons">
            <button type="button" onClick={onClose}>
              Done
            </button>
          </div>
        </div>
      ) : (
        <form method="dialog" onSubmit={submit}>
          <p>
            A token is this key for a while: give it to a web page or a colleague trying the API instead of
            the secret. It cannot be revoked; disabling or rolling the key ends it.
          </p>
          <fieldset>
            <legend>The token works for</legend>
            {TOKEN_LIFETIMES.map((lifetime) => (
              <label key={lifetime.seconds} class="radio">
                <input
                  type="radio"
                  name="lifetime"
                  value={String(lifetime.seconds)}
                  checked={seconds === lifetime.seconds}
                  onChange={() => setSeconds(lifetime.seconds)}
                />
                {lifetime.label}
              </label>
            ))}
          </fieldset>
          <DialogButtons error={action.error} onCancel={onClose}>
            <button type="submit" disabled={action.busy}>
              Mint token
            </button>
          </DialogButtons>
        </form>
      )}
    </Dialog>
  );
}
