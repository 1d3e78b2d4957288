/**
 * "Send a sign-in link": a session minted for one of a consumer's people, its link shown once (kept in
 * this component's memory only: never in the address, never in the browser's storage) with a copy button.
 */
import { useState } from 'preact/hooks';
import { ScopedButton, useAccess } from '../access';
import { api, ok } from '../api';
import { formatTime } from '../format';
import type { CreatedPortalSession } from '../types';
import { useAction } from '../use-api';
import { ErrorMessage } from './error-message';
import { ConsumerOptions } from './id-options';
import { SecretValue } from './secret-value';

const MIN_TTL_HOURS = 300 / 3600;
const MAX_TTL_HOURS = 24;
const DEFAULT_TTL_HOURS = 8;

export function PortalSignInLink({ onCreated }: { onCreated: () => void }) {
  const readOnly = useAccess().lacks('portal:sessions');
  const [consumerId, setConsumerId] = useState('');
  const [userId, setUserId] = useState('');
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [hours, setHours] = useState(String(DEFAULT_TTL_HOURS));
  const [created, setCreated] = useState<CreatedPortalSession & { who: string }>();
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    setCreated(undefined);
    const ttlHours = Number(hours);
    if (!consumerId.trim()) return action.fail('Choose the consumer the user belongs to.');
    if (!userId.trim()) return action.fail('Give the user’s id in your own system.');
    if (!(ttlHours >= MIN_TTL_HOURS && ttlHours <= MAX_TTL_HOURS))
      return action.fail(`The session lasts from 5 minutes (0.0833 hours) to ${MAX_TTL_HOURS} hours.`);
    const session = await action.run(() =>
      ok(
        api.POST('/tollgate/portal/sessions', {
          body: {
            consumerId: consumerId.trim(),
            user: {
              id: userId.trim(),
              ...(email.trim() ? { email: email.trim() } : {}),
              ...(name.trim() ? { name: name.trim() } : {}),
            },
            ttlSeconds: Math.round(ttlHours * 3600),
          },
        }),
      ),
    );
    if (session) {
      setCreated({ ...session, who: email.trim() || name.trim() || userId.trim() });
      onCreated();
    }
  };

  return (
    <section aria-labelledby="portal-link-title">
      <h2 id="portal-link-title">Send a sign-in link</h2>
      <p class="help">
        For a user your own application has signed in: the link signs them in to the portal once, within 10
        minutes. Your backend can mint these itself (POST /tollgate/portal/sessions).
      </p>
      <form class="form" onSubmit={submit} onInput={action.clear} aria-labelledby="portal-link-title">
        <div class="field">
          <label for="portal-link-consumer">Consumer</label>
          <input
            id="portal-link-consumer"
            list="portal-link-consumer-options"
            autocomplete="off"
            disabled={readOnly}
            value={consumerId}
            onInput={(e) => setConsumerId(e.currentTarget.value)}
          />
          <ConsumerOptions id="portal-link-consumer-options" />
        </div>
        <div class="field">
          <label for="portal-link-user">User id</label>
          <input
            id="portal-link-user"
            autocomplete="off"
            maxLength={200}
            disabled={readOnly}
            value={userId}
            onInput={(e) => setUserId(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="portal-link-email">Email (optional)</label>
          <input
            id="portal-link-email"
            type="email"
            autocomplete="off"
            disabled={readOnly}
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="portal-link-name">Name (optional)</label>
          <input
            id="portal-link-name"
            autocomplete="off"
            disabled={readOnly}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="portal-link-hours">Session lasts (hours)</label>
          <input
            id="portal-link-hours"
            type="number"
            min={MIN_TTL_HOURS}
            max={MAX_TTL_HOURS}
            step="any"
            disabled={readOnly}
            value={hours}
            aria-describedby="portal-link-hours-help"
            onInput={(e) => setHours(e.currentTarget.value)}
          />
          <p id="portal-link-hours-help" class="help">
            From signing in; 5 minutes to {MAX_TTL_HOURS} hours.
          </p>
        </div>
        <ErrorMessage error={action.error} />
        <div class="form-buttons">
          <ScopedButton scope="portal:sessions" type="submit" disabled={action.busy}>
            Create sign-in link
          </ScopedButton>
        </div>
      </form>
      {created && (
        <div class="created">
          <SecretValue value={created.url} label={`Sign-in link for ${created.who}`} />
          <p class="help">
            Shown this once: send it to {created.who} now. It works once, until{' '}
            {formatTime(created.expiresAt)}.
          </p>
        </div>
      )}
    </section>
  );
}
