/** One key: its state and secret, the limits of its plan and what is left, its credits, usage over time, metadata, actions. */
import { NeedsScope } from '../access';
import { api, ok } from '../api';
import { ChargedUsage, unitOf, usePlan } from '../components/charged-usage';
import { CreditsPanel } from '../components/credits-panel';
import { ErrorMessage } from '../components/error-message';
import { FailureLog } from '../components/failure-log';
import { KeyConsumer } from '../components/key-consumer';
import { KeyStatus } from '../components/key-status';
import { LeakNotice } from '../components/leak-notice';
import { LimitStatesTable } from '../components/limit-states-table';
import { PageTitle } from '../components/page-title';
import { ProxyOrVerify } from '../components/proxy-or-verify';
import { SecretValue } from '../components/secret-value';
import { formatNumber, formatTime, relativeTime } from '../format';
import { handOff, useHandoff } from '../handoff';
import { limitsOf } from '../plans';
import { href, navigate, type Route } from '../route';
import type { KeyDetail, LimitState } from '../types';
import { useApi } from '../use-api';
import { KeyActions } from './key-actions';
import { KeyUsage } from './key-usage';

/** Every limit that applies with what is left: the key's plan's (or the default's), then its consumer's. */
function limitStates(key: KeyDetail): readonly LimitState[] {
  return key.usage.rateLimits?.limits ?? [];
}

/**
 * What limits a key without a plan of its own: the API lists the default limit (DEFAULT_RATE_LIMIT) as
 * the key's own when it is set, and its consumer's limits after, named `consumer.…`.
 */
function withoutPlan(key: KeyDetail, states: readonly LimitState[]): string {
  const byDefault = states.some((s) => s.scope === 'key');
  const byConsumer = states.some((s) => s.scope === 'consumer');
  if (byDefault && byConsumer)
    return 'No plan of its own: the default limit (DEFAULT_RATE_LIMIT) applies, and its consumer’s limits.';
  if (byDefault) return 'No plan of its own: the default limit (DEFAULT_RATE_LIMIT) applies.';
  if (byConsumer) return 'No plan of its own and no default limit: its consumer’s limits apply.';
  return key.consumerId === null
    ? 'No plan is bound and no default limit is set: requests are counted, not limited.'
    : 'No plan of its own, none on its consumer and no default limit: requests are counted, not limited.';
}

function Limits({ keyDetail, plan }: { keyDetail: KeyDetail; plan: ReturnType<typeof usePlan> }) {
  const planId = keyDetail.rateLimitId;
  const states = limitStates(keyDetail);
  return (
    <section aria-labelledby="limits-title">
      <h2 id="limits-title">Limits</h2>
      {planId !== null ? (
        <p>
          Plan <a href={href('plans', planId, 'edit')}>{planId}</a>
          {plan.data?.description ? `: ${plan.data.description}` : ''}
        </p>
      ) : (
        <p>{withoutPlan(keyDetail, states)}</p>
      )}
      {states.length > 0 && (
        <LimitStatesTable
          states={states}
          algorithmOf={(name) => plan.data && limitsOf(plan.data).find((l) => l.name === name)?.algorithm}
        />
      )}
    </section>
  );
}

export function KeyDetailPage({ keyId, route }: { keyId: string; route: Route }) {
  const detail = useApi(
    (signal) =>
      ok(
        api.GET('/consumer-api-key/{consumerApiKeyId}', {
          params: { path: { consumerApiKeyId: keyId } },
          signal,
        }),
      ),
    [keyId],
  );
  // A key just created arrives with its secret to copy, and what to do with it.
  const { created: handed, message, setMessage } = useHandoff();
  const created = handed?.keyId === keyId ? handed : undefined;
  const key = detail.data?.consumerApiKeyId === keyId ? detail.data : undefined;
  const plan = usePlan(key?.rateLimitId ?? null);
  return (
    <>
      <PageTitle title={key?.name ?? 'Key'}>{key && <KeyStatus keyState={key} />}</PageTitle>
      <p class="mono muted">{keyId}</p>
      <p class="status-message" role="status">
        {message}
      </p>
      {created && (
        <div class="created">
          <SecretValue value={created.secret} label="Secret of the new key" />
          <p class="help">
            Anyone signed in with the right to read secrets can read it again under Details, below.
          </p>
        </div>
      )}
      <ErrorMessage error={detail.error} />
      {!key && detail.loading && <p role="status">Loading the key…</p>}
      {key && (
        <>
          {key.leak !== null && <LeakNotice leak={key.leak} />}
          <KeyActions
            keyDetail={key}
            onChanged={(text) => {
              setMessage(text);
              detail.reload();
            }}
            onDeleted={() => {
              handOff({ message: `The key ${key.name} is deleted: its requests are refused from now on.` });
              navigate(href('keys'));
            }}
          />
          <div class="columns">
            <section aria-labelledby="details-title">
              <h2 id="details-title">Details</h2>
              {/* The API shows a secret only to a token holding keys:secrets. */}
              {key.secret !== undefined ? (
                <SecretValue value={key.secret} label="Secret" masked />
              ) : (
                <NeedsScope scope="keys:secrets" what="Reading the secret" />
              )}
              <dl class="details">
                <dt>External ID</dt>
                <dd>{key.externalId ?? '—'}</dd>
                <dt>Allowed origins</dt>
                <dd>{key.allowedOrigins?.join(', ') ?? 'any'}</dd>
                <dt>Allowed addresses</dt>
                <dd>{key.allowedAddresses?.join(', ') ?? 'any'}</dd>
                <dt>Created</dt>
                <dd>{formatTime(key.createdAt)}</dd>
                <dt>Last changed</dt>
                <dd>{formatTime(key.lastUpdated)}</dd>
                <dt>Last used</dt>
                <dd>
                  {relativeTime(key.lastUsedAt)}
                  {key.lastUsedAt && ` (${formatTime(key.lastUsedAt)})`}
                </dd>
                <dt>Expires</dt>
                <dd>
                  {key.expiresAt ? `${formatTime(key.expiresAt)} (${relativeTime(key.expiresAt)})` : 'never'}
                </dd>
                {key.previousSecretExpiresAt !== undefined && (
                  <>
                    <dt>Previous secret</dt>
                    <dd>
                      works until {formatTime(key.previousSecretExpiresAt)} (
                      {relativeTime(key.previousSecretExpiresAt)}), the grace of the last roll
                    </dd>
                  </>
                )}
                <dt>Requests, all time</dt>
                <dd>
                  {formatNumber(key.usage.totalRequests)} ({formatNumber(key.usage.successfulRequests)}{' '}
                  successful, {formatNumber(key.usage.failedRequests)} failed)
                </dd>
                <dt>Charged, all time</dt>
                <dd>
                  <ChargedUsage
                    cost={key.usage.cost}
                    unsettled={key.usage.unsettled}
                    unit={unitOf(plan.data)}
                  />
                </dd>
              </dl>
            </section>
            <Limits keyDetail={key} plan={plan} />
          </div>
          <CreditsPanel
            holder={{ kind: 'key', id: keyId, consumerId: key.consumerId }}
            credits={key.credits}
            onChanged={(text) => {
              setMessage(text);
              detail.reload();
            }}
          />
          <KeyConsumer
            keyDetail={key}
            onChanged={(text) => {
              setMessage(text);
              detail.reload();
            }}
          />
          <KeyUsage keyId={keyId} route={route} />
          <FailureLog scope={{ kind: 'key', id: keyId }} route={route} />
          <ProxyOrVerify />
          <section aria-labelledby="metadata-title">
            <h2 id="metadata-title">Metadata</h2>
            {Object.keys(key.metadata).length === 0 ? (
              <p>None.</p>
            ) : (
              <pre class="mono metadata">{JSON.stringify(key.metadata, null, 2)}</pre>
            )}
          </section>
        </>
      )}
    </>
  );
}

/** How a limit of the key detail's table is counted, beside its period (fixed windows: nothing). */
