/**
 * The consumer's keys: each with its masked secret, state, dates and where it may be used from; and a
 * new key, whose secret is shown here once (held in this page's memory only) and never again.
 */
import { useState } from 'preact/hooks';
import { ErrorMessage } from '../../../console/src/components/error-message';
import { SecretValue } from '../../../console/src/components/secret-value';
import { countOf, formatTime, relativeTime } from '../../../console/src/format';
import { useHandoff } from '../../../console/src/handoff';
import { href } from '../../../console/src/route';
import { useAction, useApi } from '../../../console/src/use-api';
import { PortalTitle } from '../components/portal-title';
import { call } from '../portal-api';
import { usePortal } from '../portal-context';
import type { KeyWithSecret, PortalKey, PortalKeyList } from '../portal-types';

/** Where a key may be used from, in a few words. */
export const restrictionsOf = (key: PortalKey): string =>
  [
    key.allowedOrigins ? countOf(key.allowedOrigins.length, 'origin') : 'any origin',
    key.allowedAddresses ? countOf(key.allowedAddresses.length, 'address') : 'any address',
  ].join(', ');

function CreateKey({ onCreated }: { onCreated: (key: KeyWithSecret) => void }) {
  const [name, setName] = useState('');
  const action = useAction();
  const create = async (event: Event) => {
    event.preventDefault();
    const created = await action.run(() => call<KeyWithSecret>('POST', '/keys', { body: { name } }));
    if (created) {
      setName('');
      onCreated(created);
    }
  };
  return (
    <form class="inline-form" onSubmit={create} aria-labelledby="create-title">
      <h2 id="create-title">Create a key</h2>
      <div class="field inline">
        <label for="new-key-name">Name</label>
        <input
          id="new-key-name"
          required
          maxLength={200}
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </div>
      <button type="submit" disabled={action.busy}>
        Create key
      </button>
      <ErrorMessage error={action.error} />
    </form>
  );
}

export function KeysPage() {
  const { consumer } = usePortal();
  const keys = useApi((signal) => call<PortalKeyList>('GET', '/keys', { signal }), []);
  const [created, setCreated] = useState<KeyWithSecret>();
  // A key deleted on its own page says so here.
  const { message } = useHandoff();
  const list = keys.data?.keys ?? [];
  return (
    <>
      <PortalTitle title="Your keys" />
      <p class="status-message" role="status">
        {message}
      </p>
      <p class="muted">
        {consumer.name}: {countOf(list.length, 'key')}
        {keys.data && ` of ${keys.data.maxKeys}`}.
      </p>
      {created && (
        <div class="created" role="status">
          <h2>Your new key {created.name}</h2>
          <SecretValue value={created.secret} label="Secret of the new key" />
          <p class="help">
            Copy it now: it is shown this once and cannot be read again. If it is lost, roll the key for a new
            one.
          </p>
          <button type="button" class="secondary" onClick={() => setCreated(undefined)}>
            I have copied it
          </button>
        </div>
      )}
      <CreateKey
        onCreated={(key) => {
          setCreated(key);
          keys.reload();
        }}
      />
      <ErrorMessage error={keys.error} />
      {keys.loading && !keys.data && <p role="status">Loading your keys…</p>}
      {keys.data && list.length === 0 && <p>You have no key yet: create one above.</p>}
      {list.length > 0 && (
        <table class="data">
          <caption class="visually-hidden">Your keys</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key id</th>
              <th scope="col">Secret</th>
              <th scope="col">State</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Expires</th>
              <th scope="col">Used from</th>
            </tr>
          </thead>
          <tbody>
            {list.map((key) => (
              <tr key={key.id}>
                <td data-label="Name">
                  <a href={href('keys', key.id)}>{key.name}</a>
                </td>
                <td class="mono" data-label="Key id">
                  {key.id}
                </td>
                <td class="mono" data-label="Secret">
                  {key.maskedSecret}
                </td>
                <td data-label="State">{key.enabled ? 'Enabled' : 'Disabled'}</td>
                <td data-label="Created">
                  <time dateTime={key.createdAt}>{formatTime(key.createdAt)}</time>
                </td>
                <td data-label="Last used">{relativeTime(key.lastUsedAt)}</td>
                <td data-label="Expires">{key.expiresAt ? formatTime(key.expiresAt) : 'Never'}</td>
                <td data-label="Used from">{restrictionsOf(key)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
