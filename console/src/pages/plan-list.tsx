/** The plans, a page at a time: their limits, how many keys hold each, edit and delete (force when bound). */
import { useState } from 'preact/hooks';
import { ApiError, call, segment } from '../api';
import { Dialog, DialogButtons } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { Pager, usePagedApi } from '../components/pager';
import { formatNumber, formatTime } from '../format';
import { describeLimit, limitsOf } from '../plans';
import { href, hrefWith } from '../route';
import type { Plan, PlanList } from '../types';
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
  const remove = async (force: boolean) => {
    const done = await action.run(() =>
      call<{ message: string }>('DELETE', `/rate-limit/${segment(plan.rateLimitId)}`, {
        query: { force: force || undefined },
      }),
    );
    if (done) onDeleted(done.message);
  };
  const inUse =
    action.error instanceof ApiError && action.error.code === 'rate_limit_in_use' ? action.error : undefined;
  return (
    <Dialog open title={`Delete the plan ${plan.rateLimitId}?`} onClose={onClose}>
      <p>
        Keys bound to a deleted plan are no longer limited by it (the default limit applies, if one is set).
      </p>
      <DialogButtons error={action.error} onCancel={onClose}>
        {inUse ? (
          <button type="button" class="danger" disabled={action.busy} onClick={() => void remove(true)}>
            Unbind {formatNumber(inUse.keyCount ?? 0)} key(s) and delete
          </button>
        ) : (
          <button type="button" class="danger" disabled={action.busy} onClick={() => void remove(false)}>
            Delete plan
          </button>
        )}
      </DialogButtons>
    </Dialog>
  );
}

export function PlanListPage() {
  const { cursors, page: plans } = usePagedApi<PlanList>('/rate-limit', { limit: PAGE_SIZE });
  const [deleting, setDeleting] = useState<Plan>();
  const [message, setMessage] = useState('');
  return (
    <>
      <PageTitle title="Plans">
        <a class="button" href={href('plans', 'new')}>
          Create plan
        </a>
      </PageTitle>
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={plans.error} />
      {plans.loading && !plans.data && <p role="status">Loading plans…</p>}
      {plans.data && (
        <>
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
                    <td>
                      <span class="mono">{plan.rateLimitId}</span>
                      {plan.description && <div class="muted small">{plan.description}</div>}
                    </td>
                    <td>
                      <ul class="plain">
                        {limitsOf(plan).map((l, i) => (
                          <li key={i}>{describeLimit(l)}</li>
                        ))}
                      </ul>
                    </td>
                    <td class="num">
                      <a
                        href={hrefWith(href('keys'), { rateLimitId: plan.rateLimitId })}
                        aria-label={`${formatNumber(plan.keyCount)} keys on ${plan.rateLimitId}`}
                      >
                        {formatNumber(plan.keyCount)}
                      </a>
                    </td>
                    <td>{formatTime(plan.lastUpdated)}</td>
                    <td class="row-actions">
                      <a
                        href={href('plans', plan.rateLimitId, 'edit')}
                        aria-label={`Edit ${plan.rateLimitId}`}
                      >
                        Edit
                      </a>
                      <button
                        type="button"
                        class="link danger-text"
                        aria-label={`Delete ${plan.rateLimitId}`}
                        onClick={() => setDeleting(plan)}
                      >
                        Delete
                      </button>
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
