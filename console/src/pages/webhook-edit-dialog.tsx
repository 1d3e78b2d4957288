/** A webhook changed in place: its URL, description and events (what PATCH takes); its deliveries stay. */
import { useState } from 'preact/hooks';
import { api, ok } from '../api';
import { Dialog, DialogButtons } from '../components/dialog';
import { WebhookFields, type WebhookFieldValues } from '../components/webhook-fields';
import type { Webhook } from '../types';
import { useAction } from '../use-api';

export function EditWebhookDialog({
  webhook,
  onSaved,
  onClose,
}: {
  webhook: Webhook;
  onSaved: (message: string) => void;
  onClose: () => void;
}) {
  const [values, setValues] = useState<WebhookFieldValues>({
    url: webhook.url,
    description: webhook.description,
    events: webhook.events,
  });
  const { url, description, events } = values;
  const action = useAction();
  const save = async (event: Event) => {
    event.preventDefault();
    const done = await action.run(() =>
      ok(
        api.PATCH('/tollgate/webhooks/{webhookId}', {
          params: { path: { webhookId: webhook.id } },
          body: { url: url.trim(), description, events: [...events] },
        }),
      ),
    );
    if (done) onSaved(`The webhook to ${done.url} is saved.`);
  };
  return (
    <Dialog open title="Edit the webhook" onClose={onClose}>
      <form method="dialog" onSubmit={save} onInput={action.clear}>
        <WebhookFields idPrefix="edit-webhook" values={values} onChange={setValues} />
        <p class="help">Its signing secret stays as it is.</p>
        <DialogButtons error={action.error} onCancel={onClose}>
          <button type="submit" disabled={action.busy}>
            Save webhook
          </button>
        </DialogButtons>
      </form>
    </Dialog>
  );
}
