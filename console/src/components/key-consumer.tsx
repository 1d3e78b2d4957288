/** The consumer a key belongs to, as a link, and a form to give the key to another one or to none. */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { href } from '../route';
import type { KeyDetail } from '../types';
import { useAction, useApi } from '../use-api';
import { Dialog, DialogButtons } from './dialog';
import { ErrorMessage } from './error-message';
import { ConsumerOptions } from './id-options';

export function KeyConsumer({
  keyDetail,
  onChanged,
}: {
  keyDetail: KeyDetail;
  onChanged: (message: string) => void;
}) {
  const current = keyDetail.consumerId;
  const consumer = useApi(
    (signal) =>
      current === null
        ? Promise.resolve(undefined)
        : ok(
            api.GET('/tollgate/consumers/{consumerId}', {
              params: { path: { consumerId: current } },
              signal,
            }),
          ).catch(() => undefined),
    [current],
  );
  const [draft, setDraft] = useState(current ?? '');
  const [detaching, setDetaching] = useState(false);
  const action = useAction();
  const save = async (consumerId: string | null) => {
    const done = await action.run(() =>
      ok(
        api.PATCH('/consumer-api-key/{consumerApiKeyId}', {
          params: { path: { consumerApiKeyId: keyDetail.consumerApiKeyId } },
          body: { consumerId },
        }),
      ),
    );
    if (done) {
      setDetaching(false);
      setDraft(consumerId ?? '');
      onChanged(
        consumerId === null
          ? 'The key belongs to no consumer now.'
          : `The key belongs to the consumer ${consumerId} now.`,
      );
    }
  };
  return (
    <section aria-labelledby="key-consumer-title">
      <h2 id="key-consumer-title">Consumer</h2>
      {current === null ? (
        <p>The key belongs to no consumer: only its own limits apply.</p>
      ) : (
        <p>
          It belongs to <a href={href('consumers', current)}>{consumer.data?.name ?? current}</a>, whose plan
          its requests share with the consumer’s other keys.
        </p>
      )}
      <form
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          void save(draft.trim() || null);
        }}
      >
        <div class="field">
          <label for="key-consumer-id">Consumer id</label>
          <input
            id="key-consumer-id"
            list="key-consumer-options"
            autocomplete="off"
            value={draft}
            onInput={(e) => setDraft(e.currentTarget.value)}
          />
          <ConsumerOptions id="key-consumer-options" />
        </div>
        <div class="field-buttons">
          <ScopedButton scope="keys:write" type="submit" disabled={action.busy}>
            Change consumer
          </ScopedButton>
          {current !== null && (
            <ScopedButton
              scope="keys:write"
              class="secondary"
              disabled={action.busy}
              onClick={() => {
                action.clear();
                setDetaching(true);
              }}
            >
              Detach from consumer…
            </ScopedButton>
          )}
        </div>
      </form>
      {!detaching && <ErrorMessage error={action.error} />}
      {detaching && current !== null && (
        <Dialog open title="Detach the key from its consumer?" onClose={() => setDetaching(false)}>
          <p>
            From its next request the key leaves {consumer.data?.name ?? current}: the consumer’s shared
            limits no longer count it, its requests no longer spend the consumer’s credits, and billing by
            consumer no longer includes them. Its usage so far stays with the consumer.
          </p>
          <DialogButtons error={action.error} onCancel={() => setDetaching(false)} destructive>
            <button type="button" class="danger" disabled={action.busy} onClick={() => void save(null)}>
              Detach the key
            </button>
          </DialogButtons>
        </Dialog>
      )}
    </section>
  );
}
