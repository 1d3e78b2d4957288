/**
 * Creating or editing a plan: its description, one to four limits (name, requests, period, algorithm,
 * a token bucket's burst, and optionally which requests it counts) and what requests cost (decision record 0034). A plan of
 * one unnamed fixed limit of every request is sent as the seed's `{limit, period}`, any other as
 * `limits` (see `limitsBody`).
 */
import { useState } from 'preact/hooks';
import { PERIODS } from '../../../src/plans/window.js';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { ErrorMessage } from '../components/error-message';
import { draftOf, MatchFields, matchOf, NO_MATCH, type MatchDraft } from '../components/match-fields';
import { PageTitle } from '../components/page-title';
import { handOff } from '../handoff';
import {
  ALGORITHMS,
  BUCKET_PERIODS,
  limitsBody,
  limitsOf,
  MAX_COST,
  MAX_COSTS,
  MAX_LIMITS,
  MIN_COST,
  PERS,
  VISITOR_LABELS,
} from '../plans';
import { href, navigate } from '../route';
import type { Algorithm, Per, Period, Plan, PlanCost, PlanLimit, PlanLimitInput } from '../types';
import { useAction, useApi } from '../use-api';

interface LimitRow {
  readonly name: string;
  readonly limit: string;
  /** Kept while a concurrency limit (which has none) is chosen, for a switch back. */
  readonly period: Period;
  readonly algorithm: Algorithm;
  readonly per: Per;
  /** A token bucket's burst; empty: its limit. */
  readonly burst: string;
  readonly match: MatchDraft;
}

const NEW_ROW: LimitRow = {
  name: '',
  limit: '100',
  period: 'minute',
  algorithm: 'fixed',
  per: 'key',
  burst: '',
  match: NO_MATCH,
};

const ALGORITHM_LABELS: Record<Algorithm, string> = {
  fixed: 'fixed (UTC-aligned)',
  sliding: 'sliding',
  tokenBucket: 'token bucket (bursts)',
  concurrency: 'concurrency (in flight)',
};

/** A limit named after its period (a concurrency limit `concurrency`) carries the default name: the form shows it unnamed. */
const rowOf = (l: PlanLimit): LimitRow => ({
  name: l.name && l.name !== (l.period ?? 'concurrency') ? l.name : '',
  limit: String(l.limit),
  period: l.period ?? 'minute',
  algorithm: l.algorithm,
  per: l.per ?? 'key',
  burst: l.burst === undefined || l.burst === l.limit ? '' : String(l.burst),
  match: draftOf(l.match),
});

interface CostRow {
  /** Empty for a cost the backend reports that reserves from the body (`reserve`). */
  readonly cost: string;
  readonly match: MatchDraft;
  /** How a cost the backend reports is reserved and settled: not edited here, kept as it is. */
  readonly settled?: Pick<PlanCost, 'reserve' | 'settle' | 'settleMax'>;
}

const costRowOf = ({ cost, match, ...settled }: PlanCost): CostRow => ({
  cost: cost === undefined ? '' : String(cost),
  match: draftOf(match),
  ...(settled.settle !== undefined && { settled }),
});

/** The costs as the API takes them; one without a condition is sent as such, for the API to name. */
const costsOf = (rows: readonly CostRow[]): PlanCost[] =>
  rows.map((c) => ({
    ...(c.cost !== '' && { cost: Number(c.cost) }),
    match: matchOf(c.match) ?? {},
    ...c.settled,
  }));

/** The route ids to suggest in the match fields; none without routes:read (any id may still be typed). */
function useRouteIds(): readonly string[] {
  const routes = useApi((signal) => ok(api.GET('/tollgate/routes', { signal })).catch(() => undefined), []);
  return routes.data?.routes.map((r) => r.routeId) ?? [];
}

function LimitFields({
  row,
  index,
  count,
  routes,
  onChange,
  onRemove,
}: {
  row: LimitRow;
  index: number;
  count: number;
  routes: readonly string[];
  onChange: (row: LimitRow) => void;
  onRemove: () => void;
}) {
  const id = (field: string) => `limit-${index}-${field}`;
  const periods = row.algorithm === 'tokenBucket' ? BUCKET_PERIODS : PERIODS;
  return (
    <fieldset class="limit-row">
      <legend>Limit {index + 1}</legend>
      <div class="field">
        <label for={id('limit')}>{row.algorithm === 'concurrency' ? 'Requests in flight' : 'Requests'}</label>
        <input
          id={id('limit')}
          type="number"
          inputMode="numeric"
          min={1}
          step={1}
          required
          value={row.limit}
          onInput={(e) => onChange({ ...row, limit: e.currentTarget.value })}
        />
      </div>
      {row.algorithm !== 'concurrency' && (
        <div class="field">
          <label for={id('period')}>Per</label>
          <select
            id={id('period')}
            value={row.period}
            onChange={(e) => onChange({ ...row, period: e.currentTarget.value as Period })}
          >
            {periods.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </div>
      )}
      <div class="field">
        <label for={id('algorithm')}>Window</label>
        <select
          id={id('algorithm')}
          value={row.algorithm}
          onChange={(e) => {
            const algorithm = e.currentTarget.value as Algorithm;
            // A token bucket refills per day at most.
            const period =
              algorithm === 'tokenBucket' && !(BUCKET_PERIODS as readonly Period[]).includes(row.period)
                ? 'day'
                : row.period;
            onChange({ ...row, algorithm, period });
          }}
        >
          {ALGORITHMS.map((a) => (
            <option key={a} value={a}>
              {ALGORITHM_LABELS[a]}
            </option>
          ))}
        </select>
      </div>
      {row.algorithm === 'tokenBucket' && (
        <div class="field">
          <label for={id('burst')}>Burst (optional)</label>
          <input
            id={id('burst')}
            type="number"
            inputMode="numeric"
            min={1}
            step={1}
            value={row.burst}
            placeholder={row.limit}
            onInput={(e) => onChange({ ...row, burst: e.currentTarget.value })}
            aria-describedby={id('burst-help')}
          />
          <p id={id('burst-help')} class="help">
            Units the bucket holds when full (default: Requests); it refills at Requests per period.
          </p>
        </div>
      )}
      <div class="field">
        <label for={id('per')}>Counted for</label>
        <select
          id={id('per')}
          value={row.per}
          onChange={(e) => onChange({ ...row, per: e.currentTarget.value as Per })}
        >
          {PERS.map((p) => (
            <option key={p} value={p}>
              {p === 'key' ? 'the whole key' : `each ${VISITOR_LABELS[p]}`}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for={id('name')}>Name (optional)</label>
        <input
          id={id('name')}
          pattern="[A-Za-z0-9_\-]{1,32}"
          maxLength={32}
          value={row.name}
          onInput={(e) => onChange({ ...row, name: e.currentTarget.value })}
        />
      </div>
      <details class="match" open={matchOf(row.match) !== undefined}>
        <summary>Counts only some requests</summary>
        <p class="help">Empty: the limit counts every request. Every condition given must hold.</p>
        <MatchFields
          idPrefix={id('match')}
          draft={row.match}
          routes={routes}
          onChange={(match) => onChange({ ...row, match })}
        />
      </details>
      {count > 1 && (
        <button type="button" class="secondary" onClick={onRemove}>
          Remove limit {index + 1}
        </button>
      )}
    </fieldset>
  );
}

function CostFields({
  row,
  index,
  routes,
  onChange,
  onRemove,
}: {
  row: CostRow;
  index: number;
  routes: readonly string[];
  onChange: (row: CostRow) => void;
  onRemove: () => void;
}) {
  const id = (field: string) => `cost-${index}-${field}`;
  return (
    <fieldset class="limit-row">
      <legend>Cost {index + 1}</legend>
      <div class="field">
        <label for={id('cost')}>Units per request</label>
        <input
          id={id('cost')}
          type="number"
          inputMode="numeric"
          min={MIN_COST}
          max={MAX_COST}
          step={1}
          required={row.settled?.reserve === undefined}
          disabled={row.settled?.reserve !== undefined}
          value={row.cost}
          onInput={(e) => onChange({ ...row, cost: e.currentTarget.value })}
        />
      </div>
      <p class="help">For the requests that match (at least one condition):</p>
      <MatchFields
        idPrefix={id('match')}
        draft={row.match}
        routes={routes}
        onChange={(match) => onChange({ ...row, match })}
      />
      <button type="button" class="secondary" onClick={onRemove}>
        Remove cost {index + 1}
      </button>
    </fieldset>
  );
}

/** The form itself, started from the plan being edited (or empty): its fields hold what the user types. */
function PlanForm({ planId, initial }: { planId?: string; initial?: Plan }) {
  const editing = planId !== undefined;
  const [id, setId] = useState('');
  const [description, setDescription] = useState(initial?.description ?? '');
  const [rows, setRows] = useState<readonly LimitRow[]>(initial ? limitsOf(initial).map(rowOf) : [NEW_ROW]);
  const initialCosts = initial?.costs?.map(costRowOf) ?? [];
  const [costs, setCosts] = useState<readonly CostRow[]>(initialCosts);
  const routes = useRouteIds();
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const limits: PlanLimitInput[] = rows.map((r) => {
      const match = matchOf(r.match);
      return {
        ...(r.name.trim() && { name: r.name.trim() }),
        limit: Number(r.limit),
        period: r.algorithm === 'concurrency' ? null : r.period,
        algorithm: r.algorithm,
        per: r.per,
        ...(r.algorithm === 'tokenBucket' && r.burst.trim() !== '' && { burst: Number(r.burst) }),
        ...(match && { match }),
      };
    });
    const costRules = costsOf(costs);
    // Costs are sent when they differ from the plan's (editing replaces them all; [] removes them).
    const costsChanged = JSON.stringify(costRules) !== JSON.stringify(costsOf(initialCosts));
    const body = {
      description,
      ...limitsBody(limits, initial && limitsOf(initial)),
      ...(costsChanged && { costs: costRules }),
    };
    const saved = await action.run(() =>
      editing
        ? ok(api.PATCH('/rate-limit/{rateLimitId}', { params: { path: { rateLimitId: planId } }, body }))
        : ok(api.POST('/rate-limit/create', { body: { rateLimitId: id.trim(), ...body } })),
    );
    if (saved) {
      handOff({ message: `The plan ${saved.rateLimitId} is ${editing ? 'saved' : 'created'}.` });
      navigate(href('plans'));
    }
  };

  return (
    <form class="form" onSubmit={submit} onInput={action.clear}>
      {!editing && (
        <div class="field">
          <label for="plan-id">Plan id</label>
          <input
            id="plan-id"
            required
            maxLength={128}
            pattern="[A-Za-z0-9._:\-]+"
            value={id}
            onInput={(e) => setId(e.currentTarget.value)}
            aria-describedby="plan-id-help"
          />
          <p id="plan-id-help" class="help">
            1–128 characters of letters, digits and . _ : - (keys are bound to it by this id).
          </p>
        </div>
      )}
      <div class="field">
        <label for="plan-description">Description</label>
        <input
          id="plan-description"
          maxLength={1000}
          value={description}
          onInput={(e) => setDescription(e.currentTarget.value)}
        />
      </div>
      <p class="help">
        A request is admitted only when every limit has room, and then counts against all of them.
      </p>
      {rows.map((row, i) => (
        <LimitFields
          key={i}
          row={row}
          index={i}
          count={rows.length}
          routes={routes}
          onChange={(next) => setRows(rows.map((r, j) => (j === i ? next : r)))}
          onRemove={() => setRows(rows.filter((_, j) => j !== i))}
        />
      ))}
      {rows.length < MAX_LIMITS && (
        <button
          type="button"
          class="secondary"
          onClick={() => setRows([...rows, { ...NEW_ROW, period: 'day', limit: '10000' }])}
        >
          Add a limit
        </button>
      )}
      <h2>Costs</h2>
      <p class="help">
        A request costs 1 unit of every limit unless a cost below matches it: the first that matches gives its
        cost (a key’s plan is asked before its consumer’s).
      </p>
      {costs.map((row, i) => (
        <CostFields
          key={i}
          row={row}
          index={i}
          routes={routes}
          onChange={(next) => setCosts(costs.map((c, j) => (j === i ? next : c)))}
          onRemove={() => setCosts(costs.filter((_, j) => j !== i))}
        />
      ))}
      {costs.length < MAX_COSTS && (
        <button
          type="button"
          class="secondary"
          onClick={() => setCosts([...costs, { cost: '10', match: NO_MATCH }])}
        >
          Add a cost
        </button>
      )}
      <ErrorMessage error={action.error} />
      <div class="form-buttons">
        <ScopedButton scope="plans:write" type="submit" disabled={action.busy}>
          {editing ? 'Save plan' : 'Create plan'}
        </ScopedButton>
        <a href={href('plans')}>Cancel</a>
      </div>
    </form>
  );
}

export function PlanFormPage({ planId }: { planId?: string }) {
  const existing = useApi(
    (signal) =>
      planId === undefined
        ? Promise.resolve(undefined)
        : ok(api.GET('/rate-limit/{rateLimitId}', { params: { path: { rateLimitId: planId } }, signal })),
    [planId],
  );
  return (
    <>
      <PageTitle title={planId === undefined ? 'Create a plan' : `Edit the plan ${planId}`} />
      <ErrorMessage error={existing.error} />
      {planId === undefined ? (
        <PlanForm />
      ) : (
        existing.data && <PlanForm key={planId} planId={planId} initial={existing.data} />
      )}
    </>
  );
}
