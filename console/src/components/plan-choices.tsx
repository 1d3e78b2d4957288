/** Several plans chosen one by one with the plan picker (its suggestions searched as one types), each removable. */
import { useState } from 'preact/hooks';
import { PlanOptions } from './id-options';

export function PlanChoices({
  id,
  legend,
  help,
  chosen,
  disabled,
  onChange,
}: {
  id: string;
  legend: string;
  help: string;
  chosen: readonly string[];
  disabled: boolean;
  onChange: (chosen: readonly string[]) => void;
}) {
  const [draft, setDraft] = useState('');
  const add = () => {
    const planId = draft.trim();
    if (planId && !chosen.includes(planId)) onChange([...chosen, planId]);
    setDraft('');
  };
  return (
    <fieldset>
      <legend>{legend}</legend>
      <p id={`${id}-help`} class="help">
        {help}
      </p>
      {chosen.length === 0 ? (
        <p>None yet.</p>
      ) : (
        <ul class="plan-choices">
          {chosen.map((planId) => (
            <li key={planId}>
              <span class="mono">{planId}</span>{' '}
              <button
                type="button"
                class="link"
                disabled={disabled}
                aria-label={`Remove ${planId}`}
                onClick={() => onChange(chosen.filter((c) => c !== planId))}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <div class="field field-buttons">
        <div class="field">
          <label for={id}>Plan id</label>
          <input
            id={id}
            list={`${id}-options`}
            autocomplete="off"
            maxLength={128}
            disabled={disabled}
            value={draft}
            aria-describedby={`${id}-help`}
            onInput={(e) => setDraft(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter') {
                e.preventDefault();
                add();
              }
            }}
          />
          <PlanOptions id={`${id}-options`} />
        </div>
        <button type="button" class="secondary" disabled={disabled || !draft.trim()} onClick={add}>
          Add plan
        </button>
      </div>
    </fieldset>
  );
}
