/** One consumer: its fields, what is left of its plan's limits, its credits, its keys, its usage over time, edit and delete. */
import { useState } from 'preact/hooks';
import { NeedsScope, ScopedButton, ScopedLink, useAccess } from '../access';
import { api, ok } from '../api';
import { ChargedUsage, unitOf, usePlan } from '../components/charged-usage';
import { CreditsPanel } from '../components/credits-panel';
import { Dialog, DialogButtons } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { FailureLog } from '../components/failure-log';
import { LimitStatesTable } from '../components/limit-states-table';
import { PageTitle } from '../components/page-title';
import { UsageCharts } from '../components/usage-chart';
import { UsageToolbar, useUsageRange } from '../components/usage-toolbar';
import { AS_CSV } from '../download';
import { countOf, formatNumber, formatTime } from '../format';
import { handOff, useHandoff } from '../handoff';
import { href, hrefWith, navigate, type Route } from '../route';
import type { ConsumerDetail } from '../types';
import { useAction, useApi } from '../use-api';

/** At most this many of its keys are listed here; the key list shows them all. */
const KEYS_SHOWN = 100;

function DeleteConsumerDialog({ consumer, onClose }: { consumer: ConsumerDetail; onClose: () => void }) {
  const action = useAction();
  // The keys as the page read them, or as the API counted them when keys were added since.
  const keyCount = (action.error?.code === 'consumer_has_keys' && action.error.keyCount) || consumer.keyCount;
  const remove = async () => {
    const done = await action.run(() =>
      ok(
        api.DELETE('/tollgate/consumers/{consumerId}', {
          params: {
            path: { consumerId: consumer.consumerId },
            query: { force: keyCount > 0 || undefined },
          },
        }),
      ),
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
      {states.length > 0 && <LimitStatesTable states={states} showWhose />}
    </section>
  );
}

function ConsumerKeys({ consumerId }: { consumerId: string }) {
  const keys = useApi(
    (signal) =>
      ok(api.GET('/consumer-api-key', { params: { query: { consumerId, limit: KEYS_SHOWN } }, signal })),
    [consumerId],
  );
  return (
    <section aria-labelledby="consumer-keys-title">
      <h2 id="consumer-keys-title">Keys</h2>
      <p>
        <ScopedLink scope="keys:write" href={hrefWith(href('keys', 'new'), { consumerId })}>
          Add a key
        </ScopedLink>
      </p>
      <ErrorMessage error={keys.error} />
      {keys.data &&
        (keys.data.apiKeys.length === 0 ? (
          <p>No key belongs to this consumer yet. Add one, or give one to it on the key’s page.</p>
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

/** What the consumer's keys did while they belonged to it, over a range, as charts and CSV. */
function ConsumerUsage({ consumerId, route }: { consumerId: string; route: Route }) {
  const usage = useUsageRange(route, ['consumers', consumerId]);
  const { lacks } = useAccess();
  const params = { path: { consumerId }, query: { ...usage.range, granularity: usage.granularity } };
  const buckets = useApi(
    (signal) =>
      lacks('usage:read')
        ? Promise.resolve(undefined)
        : ok(api.GET('/tollgate/consumers/{consumerId}/usage', { params, signal })),
    [consumerId, usage.range, usage.granularity, lacks('usage:read')],
  );
  return (
    <section aria-labelledby="consumer-usage-title">
      <h2 id="consumer-usage-title">Usage over time</h2>
      <UsageToolbar
        usage={usage}
        csv={{
          load: () => ok(api.GET('/tollgate/consumers/{consumerId}/usage', { params, ...AS_CSV })),
          name: `usage-${consumerId}`,
        }}
      />
      {lacks('usage:read') && <NeedsScope scope="usage:read" what="Usage over time" />}
      <ErrorMessage error={buckets.error} />
      {buckets.data && (
        <UsageCharts
          buckets={buckets.data.buckets}
          latencyMs={buckets.data.latencyMs}
          caption={`This consumer, ${usage.preset.label.toLowerCase()}, per ${buckets.data.granularity}`}
        />
      )}
    </section>
  );
}

export function ConsumerDetailPage({ consumerId, route }: { consumerId: string; route: Route }) {
  const detail = useApi(
    (signal) => ok(api.GET('/tollgate/consumers/{consumerId}', { params: { path: { consumerId } }, signal })),
    [consumerId],
  );
  const { message, setMessage } = useHandoff();
  const [deleting, setDeleting] = useState(false);
  const consumer = detail.data;
  const plan = usePlan(consumer?.rateLimitId ?? null);
  return (
    <>
      <PageTitle title={consumer?.name ?? 'Consumer'}>
        {consumer && (
          <>
            <ScopedLink scope="keys:write" href={href('consumers', consumerId, 'edit')}>
              Edit
            </ScopedLink>
            <ScopedButton scope="keys:write" class="danger" onClick={() => setDeleting(true)}>
              Delete
            </ScopedButton>
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
                <dt>Charged, all time</dt>
                <dd>
                  <ChargedUsage
                    cost={consumer.usage.cost}
                    unsettled={consumer.usage.unsettled}
                    unit={unitOf(plan.data)}
                  />
                </dd>
              </dl>
            </section>
            <ConsumerLimits consumer={consumer} />
          </div>
          <CreditsPanel
            holder={{ kind: 'consumer', id: consumerId }}
            credits={consumer.credits}
            onChanged={(text) => {
              setMessage(text);
              detail.reload();
            }}
          />
          <ConsumerKeys consumerId={consumerId} />
          <ConsumerUsage consumerId={consumerId} route={route} />
          <FailureLog scope={{ kind: 'consumer', id: consumerId }} route={route} />
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
