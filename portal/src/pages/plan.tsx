/**
 * The consumer's plan: each limit with what is left of it now, its credits, and the team's public plans
 * to switch to. A switch is in force at once on every replica; what the current windows spent is kept.
 */
import { useState } from 'preact/hooks';
import { refillText } from '../../../console/src/credits';
import { ErrorMessage } from '../../../console/src/components/error-message';
import { LimitStatesTable } from '../../../console/src/components/limit-states-table';
import { formatNumber } from '../../../console/src/format';
import { useAction, useApi } from '../../../console/src/use-api';
import { PortalTitle } from '../components/portal-title';
import { call } from '../portal-api';
import type { LimitState, PlanAndCredits, PortalPlanSummary } from '../portal-types';

function LimitsTable({ limits }: { limits: readonly LimitState[] }) {
  if (limits.length === 0) return <p>No request counted against your plan yet.</p>;
  return <LimitStatesTable states={limits} caption="Your limits and what is left of them now" />;
}

const limitsText = (plan: PortalPlanSummary) =>
  plan.limits
    .map((l) => (l.period ? `${formatNumber(l.limit)} a ${l.period}` : `${formatNumber(l.limit)} at once`))
    .join(', ') || 'No limit';

/** A plan's name as a customer reads it: what it says of itself, else its id. */
const planName = (plan: PortalPlanSummary) => plan.description || plan.rateLimitId;

export function PlanPage() {
  const state = useApi((signal) => call<PlanAndCredits>('GET', '/plan', { signal }), []);
  const action = useAction();
  const [message, setMessage] = useState('');
  const data = state.data;
  const switchTo = async (plan: PortalPlanSummary) => {
    const done = await action.run(() => call('POST', '/plan', { body: { rateLimitId: plan.rateLimitId } }));
    if (done) {
      setMessage(`You are on the ${planName(plan)} plan now.`);
      state.reload();
    }
  };
  return (
    <>
      <PortalTitle title="Plan and credits" />
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={state.error ?? action.error} />
      {!data && state.loading && <p role="status">Loading your plan…</p>}
      {data && (
        <>
          <section aria-labelledby="current-title">
            <h2 id="current-title">{data.current ? `Your plan: ${planName(data.current)}` : 'Your plan'}</h2>
            {data.current ? (
              <>
                <p>{limitsText(data.current)}</p>
                <LimitsTable limits={data.current.state?.limits ?? []} />
              </>
            ) : (
              <p>You have no plan: your requests are counted, not limited.</p>
            )}
          </section>
          <section aria-labelledby="credits-title">
            <h2 id="credits-title">Credits</h2>
            {data.credits === null ? (
              <p>Your requests do not spend credits.</p>
            ) : (
              <p>
                <strong>{formatNumber(data.credits.remaining)}</strong> credits left.{' '}
                {refillText(data.credits.refill)}.
              </p>
            )}
          </section>
          <section aria-labelledby="plans-title">
            <h2 id="plans-title">Plans you can switch to</h2>
            {data.publicPlans.length === 0 && <p>There is no other plan to choose.</p>}
            <ul class="plans">
              {data.publicPlans.map((plan) => {
                const current = plan.rateLimitId === data.current?.rateLimitId;
                return (
                  <li key={plan.rateLimitId} class="plan-card">
                    <h3>{planName(plan)}</h3>
                    <p>{limitsText(plan)}</p>
                    {current ? (
                      <p>
                        <strong>Your current plan</strong>
                      </p>
                    ) : (
                      <button type="button" disabled={action.busy} onClick={() => void switchTo(plan)}>
                        Switch to {planName(plan)}
                      </button>
                    )}
                  </li>
                );
              })}
            </ul>
          </section>
        </>
      )}
    </>
  );
}
