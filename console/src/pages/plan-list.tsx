/** The plans, a page at a time: their limits, how many keys hold each, edit and delete (force when bound). */
import { useState } from 'preact/hooks';
import { ScopedButton, ScopedLink } from '../access';
import { api, ok } from '../api';
import { Dialog, DialogButtons } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { ListCount, Pager, usePagedApi } from '../components/pager';
import { countOf, formatNumber, formatTime } from '../format';
import { useHandoff } from '../handoff';
import { describeCost, describeLimit, describeMatch, limitsOf } from '../plans';
import { href, hrefWith, type Route } from '../route';
import type { Plan } from '../types';
import { useAction } from '../use-api';

const PAGE_SIZE = 50;

function DeletePlanDialog({
  plan,
  onDeleted,
  onClose,
}: {
  plan: Plan;
  onDeleted: (message: string) => void;
  onClose: () => void;
}) {
  const action = useAction();
  // The keys holding the plan as listed, or as the API counted them when keys were bound since.
  const keyCount = (action.error?.code === 'rate_limit_in_use' && action.error.keyCount) || plan.keyCount;
  const remove = async () => {
    const done = await action.run(() =>
      ok(
        api.DELETE('/rate-limit/{rateLimitId}', {
          params: { path: { rateLimitId: plan.rateLimitId }, query: { force: keyCount > 0 || undefined } },
        }),
      ),
    );
    if (done) onDeleted(done.message);
  };
  return (
    <Dialog open title={`Delete the plan ${plan.rateLimitId}?`} onClose={onClose}>
      <p>
        {keyCount === 0
          ? 'No key holds this plan.'
          : `${countOf(keyCount, 'key')} ${keyCount === 1 ? 'holds' : 'hold'} this plan. Deleting it ` +
            'unbinds its keys first: from then on the default limit applies to them, if one is set.'}{' '}
        This cannot be undone.
      </p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void remove()}>
          {keyCount === 0 ? 'Delete plan' : `Unbind ${countOf(keyCount, 'key')} and delete`}
        </button>
      </DialogButtons>
    </Dialog>
  );
}

export function PlanListPage({ route }: { route: Route }) {
  const { cursors, page: plans } = usePagedApi(
    (cursor, signal) =>
      ok(api.GET('/rate-limit', { params: { query: { limit: PAGE_SIZE, cursor } }, signal })),
    '',
    route,
  );
  const [deleting, setDeleting] = useState<Plan>();
  // What the page before said as it came here (a plan saved).
  const { message, setMessage } = useHandoff();
  return (
    <>
      <PageTitle title="Plans">
        <ScopedLink scope="plans:write" href={href('plans', 'new')}>
          Create plan
        </ScopedLink>
      </PageTitle>
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={plans.error} />
      {plans.loading && !plans.data && <p role="status">Loading plans…</p>}
      {plans.data && (
        <>
          <ListCount
            cursors={cursors}
            page={plans}
            rows={plans.data.rateLimits.length}
            size={PAGE_SIZE}
            noun={['plan', 'plans']}
          />
          {plans.data.rateLimits.length === 0 ? (
            <p>No plan yet.</p>
          ) : (
            <table class="data">
              <caption class="visually-hidden">Plans, page {cursors.pageNumber}</caption>
              <thead>
                <tr>
                  <th scope="col">Plan</th>
                  <th scope="col">Limits</th>
                  <th scope="col" class="num">
                    Keys
                  </th>
                  <th scope="col">Last changed</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {plans.data.rateLimits.map((plan) => (
                  <tr key={plan.rateLimitId} data-plan-id={plan.rateLimitId}>
                    <td data-label="Plan">
                      <span class="mono">{plan.rateLimitId}</span>
                      {plan.description && <div class="muted small">{plan.description}</div>}
                    </td>
                    <td data-label="Limits">
                      {plan.unit !== 'requests' && <div class="muted small">in {plan.unit}</div>}
                      <ul class="plain">
                        {limitsOf(plan).map((l, i) => (
                          <li key={i}>{describeLimit(l)}</li>
                        ))}
                        {(plan.costs ?? []).map((c, i) => (
                          <li key={`cost-${i}`}>
                            {describeCost(c)} for {describeMatch(c.match)}
                          </li>
                        ))}
                      </ul>
                    </td>
                    <td class="num" data-label="Keys">
                      <a
                        href={hrefWith(href('keys'), { rateLimitId: plan.rateLimitId })}
                        aria-label={`${formatNumber(plan.keyCount)} keys on ${plan.rateLimitId}`}
                      >
                        {formatNumber(plan.keyCount)}
                      </a>
                    </td>
                    <td data-label="Last changed">{formatTime(plan.lastUpdated)}</td>
                    <td class="row-actions">
                      <ScopedLink
                        scope="plans:write"
                        class=""
                        href={href('plans', plan.rateLimitId, 'edit')}
                        label={`Edit ${plan.rateLimitId}`}
                      >
                        Edit
                      </ScopedLink>
                      <ScopedButton
                        scope="plans:write"
                        class="link danger-text"
                        aria-label={`Delete ${plan.rateLimitId}`}
                        onClick={() => setDeleting(plan)}
                      >
                        Delete
                      </ScopedButton>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <Pager cursors={cursors} page={plans} label="Plans" />
        </>
      )}
      {deleting && (
        <DeletePlanDialog
          plan={deleting}
          onClose={() => setDeleting(undefined)}
          onDeleted={(text) => {
            setDeleting(undefined);
            setMessage(text);
            plans.reload();
          }}
        />
      )}
    </>
  );
}
