/** A webhook's URL, description and events: the fields the new-webhook form and the edit dialog share. */
import type { WebhookEvent } from '../types';
import { WEBHOOK_EVENTS } from '../webhook-events';
import { CheckboxGroup } from './checkbox-group';

export interface WebhookFieldValues {
  url: string;
  description: string;
  events: readonly WebhookEvent[];
}

export function WebhookFields({
  idPrefix,
  values,
  onChange,
}: {
  /** Keeps the inputs' ids apart where both forms are on the page. */
  idPrefix: string;
  values: WebhookFieldValues;
  onChange: (values: WebhookFieldValues) => void;
}) {
  return (
    <>
      <div class="field">
        <label for={`${idPrefix}-url`}>URL</label>
        <input
          id={`${idPrefix}-url`}
          type="url"
          required
          maxLength={2048}
          value={values.url}
          onInput={(e) => onChange({ ...values, url: e.currentTarget.value })}
        />
      </div>
      <div class="field">
        <label for={`${idPrefix}-description`}>Description</label>
        <input
          id={`${idPrefix}-description`}
          maxLength={1000}
          value={values.description}
          onInput={(e) => onChange({ ...values, description: e.currentTarget.value })}
        />
      </div>
      <CheckboxGroup
        legend="Events"
        options={WEBHOOK_EVENTS}
        chosen={values.events}
        onChange={(events) => onChange({ ...values, events })}
      />
    </>
  );
}
