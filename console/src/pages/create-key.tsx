/**
 * A new key: name, owner, plan, consumer (the one whose page it was added from), expiry, state and
 * metadata. Once created, its own page opens (where it
 * is found at once, whatever page of the list it lands on) with its secret ready to copy.
 */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { ErrorMessage } from '../components/error-message';
import { ExpiryField } from '../components/expiry-field';
import { KeyIdentityFields } from '../components/key-identity-fields';
import { MetadataField } from '../components/metadata-field';
import { PageTitle } from '../components/page-title';
import { METADATA_HINT, parseJsonObject, utcInputToIso } from '../format';
import { handOff } from '../handoff';
import { href, navigate, type Route } from '../route';
import { useAction, useApi } from '../use-api';

export function CreateKeyPage({ route }: { route: Route }) {
  const consumerId = route.query.get('consumerId') ?? '';
  const consumer = useApi(
    (signal) =>
      consumerId === ''
        ? Promise.resolve(undefined)
        : ok(api.GET('/tollgate/consumers/{consumerId}', { params: { path: { consumerId } }, signal })),
    [consumerId],
  );
  const [name, setName] = useState('');
  const [externalId, setExternalId] = useState('');
  const [planId, setPlanId] = useState('');
  const [expiresAt, setExpiresAt] = useState('');
  const [enabled, setEnabled] = useState(true);
  const [metadata, setMetadata] = useState('{}');
  const [metadataProblem, setMetadataProblem] = useState<string>();
  const plans = useApi(
    (signal) =>
      ok(api.GET('/rate-limit', { params: { query: { limit: 1000 } }, signal })).catch(() => undefined),
    [],
  );
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const parsed = parseJsonObject(metadata);
    // The datetime-local field holds a whole date and time or nothing.
    const expiry = expiresAt === '' ? null : utcInputToIso(expiresAt);
    setMetadataProblem(parsed === undefined ? METADATA_HINT : undefined);
    if (parsed !== undefined) {
      const body = {
        name,
        enabled,
        metadata: parsed,
        ...(externalId.trim() !== '' && { externalId: externalId.trim() }),
        ...(planId !== '' && { rateLimitId: planId }),
        ...(consumerId !== '' && { consumerId }),
        ...(expiry && { expiresAt: expiry }),
      };
      const key = await action.run(() => ok(api.POST('/consumer-api-key/create', { body })));
      if (key) {
        handOff({
          message: 'The key is created. Copy its secret now and give it to its owner.',
          created: { keyId: key.id, secret: key.secret },
        });
        navigate(href('keys', key.id));
      }
    }
  };

  return (
    <>
      <PageTitle title={consumerId === '' ? 'Create a key' : 'Add a key to a consumer'} />
      {consumerId !== '' && (
        <p>
          For the consumer <a href={href('consumers', consumerId)}>{consumer.data?.name ?? consumerId}</a>:
          the key shares its plan’s limits and its credits with the consumer’s other keys.
        </p>
      )}
      <ErrorMessage error={consumer.error} />
      <form class="form" onSubmit={submit} onInput={action.clear}>
        <KeyIdentityFields
          idPrefix="key"
          name={name}
          externalId={externalId}
          onName={setName}
          onExternalId={setExternalId}
          externalLabel="External ID (optional)"
          externalHelp="The owner's id in your own system, to find the key by later."
        />
        <div class="field">
          <label for="key-plan">Plan</label>
          <select id="key-plan" value={planId} onChange={(e) => setPlanId(e.currentTarget.value)}>
            <option value="">No plan</option>
            {(plans.data?.rateLimits ?? []).map((p) => (
              <option key={p.rateLimitId} value={p.rateLimitId}>
                {p.rateLimitId}
                {p.description ? ` (${p.description})` : ''}
              </option>
            ))}
          </select>
        </div>
        <ExpiryField
          id="key-expires"
          label="Expires at (UTC, optional)"
          value={expiresAt}
          onInput={setExpiresAt}
        />
        <div class="field">
          <label class="checkbox">
            <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
            Enabled
          </label>
        </div>
        <MetadataField
          id="key-metadata"
          rows={4}
          value={metadata}
          onInput={setMetadata}
          problem={metadataProblem}
        />
        <ErrorMessage error={action.error} />
        <div class="form-buttons">
          <ScopedButton scope="keys:write" type="submit" disabled={action.busy}>
            Create key
          </ScopedButton>
          <a href={consumerId === '' ? href('keys') : href('consumers', consumerId)}>Cancel</a>
        </div>
      </form>
    </>
  );
}
