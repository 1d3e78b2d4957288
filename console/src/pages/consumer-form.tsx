/** A consumer created or edited: its name, owner id, plan (bound or unbound here) and metadata. */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { ErrorMessage } from '../components/error-message';
import { PlanOptions } from '../components/id-options';
import { MetadataField } from '../components/metadata-field';
import { PageTitle } from '../components/page-title';
import { METADATA_HINT, parseJsonObject } from '../format';
import { handOff } from '../handoff';
import { href, navigate } from '../route';
import type { Consumer } from '../types';
import { useAction, useApi } from '../use-api';

function ConsumerForm({ initial }: { initial?: Consumer }) {
  const [name, setName] = useState(initial?.name ?? '');
  const [externalId, setExternalId] = useState(initial?.externalId ?? '');
  const [planId, setPlanId] = useState(initial?.rateLimitId ?? '');
  const [metadata, setMetadata] = useState(JSON.stringify(initial?.metadata ?? {}, null, 2));
  const [metadataProblem, setMetadataProblem] = useState<string>();
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const parsed = parseJsonObject(metadata);
    setMetadataProblem(parsed === undefined ? METADATA_HINT : undefined);
    if (parsed === undefined) return;
    // An emptied field clears the value (null); on create it is simply left out.
    const cleared = initial ? null : undefined;
    const body = {
      name: name.trim(),
      externalId: externalId.trim() || cleared,
      rateLimitId: planId.trim() || cleared,
      metadata: parsed,
    };
    const saved = await action.run(() =>
      initial
        ? ok(
            api.PATCH('/tollgate/consumers/{consumerId}', {
              params: { path: { consumerId: initial.consumerId } },
              body,
            }),
          )
        : ok(api.POST('/tollgate/consumers', { body })),
    );
    if (saved) {
      handOff({ message: `The consumer ${saved.name} is ${initial ? 'saved' : 'created'}.` });
      navigate(href('consumers', saved.consumerId));
    }
  };

  return (
    <form class="form" onSubmit={submit} onInput={action.clear}>
      <div class="field">
        <label for="consumer-name">Name</label>
        <input
          id="consumer-name"
          required
          maxLength={200}
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </div>
      <div class="field">
        <label for="consumer-external-id">External ID</label>
        <input
          id="consumer-external-id"
          maxLength={200}
          value={externalId}
          onInput={(e) => setExternalId(e.currentTarget.value)}
          aria-describedby="consumer-external-id-help"
        />
        <p id="consumer-external-id-help" class="help">
          The account’s id in your own system (optional); no two consumers share one.
        </p>
      </div>
      <div class="field">
        <label for="consumer-plan">Plan id</label>
        <input
          id="consumer-plan"
          list="consumer-plan-options"
          autocomplete="off"
          maxLength={128}
          value={planId}
          onInput={(e) => setPlanId(e.currentTarget.value)}
          aria-describedby="consumer-plan-help"
        />
        <PlanOptions id="consumer-plan-options" />
        <p id="consumer-plan-help" class="help">
          The plan all the consumer’s keys share, on top of each key’s own; leave empty for none.
        </p>
      </div>
      <MetadataField
        id="consumer-metadata"
        rows={4}
        value={metadata}
        onInput={setMetadata}
        problem={metadataProblem}
      />
      <ErrorMessage error={action.error} />
      <div class="form-buttons">
        <ScopedButton scope="keys:write" type="submit" disabled={action.busy}>
          {initial ? 'Save consumer' : 'Create consumer'}
        </ScopedButton>
        <a href={initial ? href('consumers', initial.consumerId) : href('consumers')}>Cancel</a>
      </div>
    </form>
  );
}

export function ConsumerFormPage({ consumerId }: { consumerId?: string }) {
  const existing = useApi(
    (signal) =>
      consumerId === undefined
        ? Promise.resolve(undefined)
        : ok(api.GET('/tollgate/consumers/{consumerId}', { params: { path: { consumerId } }, signal })),
    [consumerId],
  );
  return (
    <>
      <PageTitle
        title={
          consumerId === undefined ? 'Create a consumer' : `Edit the consumer ${existing.data?.name ?? ''}`
        }
      />
      <ErrorMessage error={existing.error} />
      {consumerId === undefined ? (
        <ConsumerForm />
      ) : (
        existing.data && <ConsumerForm key={consumerId} initial={existing.data} />
      )}
    </>
  );
}
