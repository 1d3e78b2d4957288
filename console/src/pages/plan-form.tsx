/**
 * Creating or editing a plan: its description and one to four limits (name, requests, period,
 * algorithm). A plan of one unnamed fixed limit is sent as the seed's `{limit, period}`, any other
 * as `limits` (see `limitsBody`).
 */
import { useState } from 'preact/hooks';
import { PERIODS } from '../../../src/plans/window.js';
import { call, segment } from '../api';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { handOff } from '../handoff';
import { ALGORITHMS, limitsBody, limitsOf, MAX_LIMITS } from '../plans';
import { href, navigate } from '../route';
import type { Algorithm, Period, Plan, PlanLimit, PlanLimitInput } from '../types';
import { useAction, useApi } from '../use-api';

interface LimitRow {
  readonly name: string;
  readonly limit: string;
  readonly period: Period;
  readonly algorithm: Algorithm;
}

const NEW_ROW: LimitRow = { name: '', limit: '100', period: 'minute', algorithm: 'fixed' };

/** A limit named after its period carries the default name: the form shows it unnamed. */
const rowOf = (l: PlanLimit): LimitRow => ({
  name: l.name && l.name !== l.period ? l.name : '',
  limit: String(l.limit),
  period: l.period,
  algorithm: l.algorithm,
});

function LimitFields({
  row,
  index,
  count,
  onChange,
  onRemove,
}: {
  row: LimitRow;
  index: number;
  count: number;
  onChange: (row: LimitRow) => void;
  onRemove: () => void;
}) {
  const id = (field: string) => `limit-${index}-${field}`;
  return (
    <fieldset class="limit-row">
      <legend>Limit {index + 1}</legend>
      <div class="field">
        <label for={id('limit')}>Requests</label>
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
      <div class="field">
        <label for={id('period')}>Per</label>
        <select
          id={id('period')}
          value={row.period}
          onChange={(e) => onChange({ ...row, period: e.currentTarget.value as Period })}
        >
          {PERIODS.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for={id('algorithm')}>Window</label>
        <select
          id={id('algorithm')}
          value={row.algorithm}
          onChange={(e) => onChange({ ...row, algorithm: e.currentTarget.value as Algorithm })}
        >
          {ALGORITHMS.map((a) => (
            <option key={a} value={a}>
              {a === 'fixed' ? 'fixed (UTC-aligned)' : 'sliding'}
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
      {count > 1 && (
        <button type="button" class="secondary" onClick={onRemove}>
          Remove limit {index + 1}
        </button>
      )}
    </fieldset>
  );
}

/** The form itself, started from the plan being edited (or empty): its fields hold what the user types. */
function PlanForm({ planId, initial }: { planId?: string; initial?: Plan }) {
  const editing = planId !== undefined;
  const [id, setId] = useState('');
  const [description, setDescription] = useState(initial?.description ?? '');
  const [rows, setRows] = useState<readonly LimitRow[]>(initial ? limitsOf(initial).map(rowOf) : [NEW_ROW]);
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const limits: PlanLimitInput[] = rows.map((r) => ({
      ...(r.name.trim() && { name: r.name.trim() }),
      limit: Number(r.limit),
      period: r.period,
      algorithm: r.algorithm,
    }));
    const body = { description, ...limitsBody(limits, initial && limitsOf(initial)) };
    const saved = await action.run(() =>
      editing
        ? call<Plan>('PATCH', `/rate-limit/${segment(planId)}`, { body })
        : call<Plan>('POST', '/rate-limit/create', { body: { rateLimitId: id.trim(), ...body } }),
    );
    if (saved) {
      handOff({ message: `The plan ${saved.rateLimitId} is ${editing ? 'saved' : 'created'}.` });
      navigate(href('plans'));
    }
  };

  return (
    <form class="form" onSubmit={submit}>
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
      <ErrorMessage error={action.error} />
      <div class="form-buttons">
        <button type="submit" disabled={action.busy}>
          {editing ? 'Save plan' : 'Create plan'}
        </button>
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
        : call<Plan>('GET', `/rate-limit/${segment(planId)}`, { signal }),
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
