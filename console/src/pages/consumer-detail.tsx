/** One consumer: its fields, what is left of its plan's limits, its keys, edit and delete. */
import { useState } from 'preact/hooks';
import { call, segment } from '../api';
import { Dialog, DialogButtons } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { countOf, formatNumber, formatTime } from '../format';
import { handOff, useHandoff } from '../handoff';
import { href, navigate } from '../route';
import type { ConsumerDetail, ListKeysResponse } from '../types';
import { useAction, useApi } from '../use-api';

/** At most this many of its keys are listed here; the key list shows them all. */
const KEYS_SHOWN = 100;

function DeleteConsumerDialog({ consumer, onClose }: { consumer: ConsumerDetail; onClose: () => void }) {
  const action = useAction();
  // The keys as the page read them, or as the API counted them when keys were added since.
  const keyCount = (action.error?.code === 'consumer_has_keys' && action.error.keyCount) || consumer.keyCount;
  const remove = async () => {
    const done = await action.run(() =>
      call<{ message: string }>('DELETE', `/tollgate/consumers/${segment(consumer.consumerId)}`, {
        query: { force: keyCount > 0 || undefined },
      }),
    );
    if (done) {
      handOff({ message: `The consumer ${consumer.name} is deleted.` });
      navigate(href('consumers'));
    }
  };
  return (
    <Dialog open title={`Delete the consumer ${consumer.name}?`} onClose={onClose}>
      <p>
        {keyCount === 0
          ? 'No key belongs to this consumer.'
          : `${countOf(keyCount, 'key')} ${keyCount === 1 ? 'belongs' : 'belong'} to this consumer. Deleting ` +
            'it detaches them first: they keep working, each with only its own limits.'}{' '}
        This cannot be undone.
      </p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void remove()}>
          {keyCount === 0 ? 'Delete consumer' : `Detach ${countOf(keyCount, 'key')} and delete`}
        </button>
      </DialogButtons>
    </Dialog>
  );
}

function ConsumerLimits({ consumer }: { consumer: ConsumerDetail }) {
  const states = consumer.usage.rateLimits?.limits ?? [];
  return (
    <section aria-labelledby="consumer-limits-title">
      <h2 id="consumer-limits-title">Limits</h2>
      {consumer.rateLimitId === null ? (
        <p>No plan is bound: each key has only its own limits.</p>
      ) : (
        <p>
          Plan <a href={href('plans', consumer.rateLimitId, 'edit')}>{consumer.rateLimitId}</a>, shared by all
          its keys.
        </p>
      )}
      {states.length > 0 && (
        <table class="data">
          <thead>
            <tr>
              <th scope="col">Limit</th>
              <th scope="col">Whose</th>
              <th scope="col" class="num">
                Allowed
              </th>
              <th scope="col">Per</th>
              <th scope="col" class="num">
                Left now
              </th>
              <th scope="col">Resets at</th>
            </tr>
          </thead>
          <tbody>
            {states.map((s) => (
              <tr key={s.name}>
                <td data-label="Limit">{s.name}</td>
                <td data-label="Whose">{s.scope === 'consumer' ? 'the consumer (all its keys)' : 'a key'}</td>
                <td class="num" data-label="Allowed">
                  {formatNumber(s.limit)}
                </td>
                <td data-label="Per">{s.period}</td>
                <td class="num" data-label="Left now">
                  {formatNumber(s.remaining)}
                </td>
                <td data-label="Resets at">{formatTime(s.resetTime)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function ConsumerKeys({ consumerId }: { consumerId: string }) {
  const keys = useApi(
    (signal) =>
      call<ListKeysResponse>('GET', '/consumer-api-key', {
        query: { consumerId, limit: KEYS_SHOWN },
        signal,
      }),
    [consumerId],
  );
  return (
    <section aria-labelledby="consumer-keys-title">
      <h2 id="consumer-keys-title">Keys</h2>
      <ErrorMessage error={keys.error} />
      {keys.data &&
        (keys.data.apiKeys.length === 0 ? (
          <p>No key belongs to this consumer. Give a key to it on the key’s page.</p>
        ) : (
          <>
            <ul class="plain">
              {keys.data.apiKeys.map((k) => (
                <li key={k.consumerApiKeyId} data-key-id={k.consumerApiKeyId}>
                  <a href={href('keys', k.consumerApiKeyId)}>{k.name}</a>{' '}
                  <span class="muted">{k.enabled ? '' : '(disabled)'}</span>
                </li>
              ))}
            </ul>
            {keys.data.nextCursor !== undefined && <p>The first {KEYS_SHOWN} of its keys are listed.</p>}
          </>
        ))}
    </section>
  );
}

export function ConsumerDetailPage({ consumerId }: { consumerId: string }) {
  const detail = useApi(
    (signal) => call<ConsumerDetail>('GET', `/tollgate/consumers/${segment(consumerId)}`, { signal }),
    [consumerId],
  );
  const { message } = useHandoff();
  const [deleting, setDeleting] = useState(false);
  const consumer = detail.data;
  return (
    <>
      <PageTitle title={consumer?.name ?? 'Consumer'}>
        {consumer && (
          <>
            <a class="button" href={href('consumers', consumerId, 'edit')}>
              Edit
            </a>
            <button type="button" class="danger" onClick={() => setDeleting(true)}>
              Delete
            </button>
          </>
        )}
      </PageTitle>
      <p class="mono muted">{consumerId}</p>
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={detail.error} />
      {!consumer && detail.loading && <p role="status">Loading the consumer…</p>}
      {consumer && (
        <>
          <div class="columns">
            <section aria-labelledby="consumer-details-title">
              <h2 id="consumer-details-title">Details</h2>
              <dl class="details">
                <dt>External ID</dt>
                <dd>{consumer.externalId ?? '—'}</dd>
                <dt>Keys</dt>
                <dd>{formatNumber(consumer.keyCount)}</dd>
                <dt>Created</dt>
                <dd>{formatTime(consumer.createdAt)}</dd>
                <dt>Last changed</dt>
                <dd>{formatTime(consumer.lastUpdated)}</dd>
              </dl>
            </section>
            <ConsumerLimits consumer={consumer} />
          </div>
          <ConsumerKeys consumerId={consumerId} />
          <section aria-labelledby="consumer-metadata-title">
            <h2 id="consumer-metadata-title">Metadata</h2>
            {Object.keys(consumer.metadata).length === 0 ? (
              <p>None.</p>
            ) : (
              <pre class="mono metadata">{JSON.stringify(consumer.metadata, null, 2)}</pre>
            )}
          </section>
          {deleting && <DeleteConsumerDialog consumer={consumer} onClose={() => setDeleting(false)} />}
        </>
      )}
    </>
  );
}
