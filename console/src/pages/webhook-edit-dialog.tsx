/** A webhook changed in place: its URL, description and events (what PATCH takes); its deliveries stay. */
import { useState } from 'preact/hooks';
import { api, ok } from '../api';
import { CheckboxGroup } from '../components/checkbox-group';
import { Dialog, DialogButtons } from '../components/dialog';
import type { Webhook, WebhookEvent } from '../types';
import { useAction } from '../use-api';
import { WEBHOOK_EVENTS } from '../webhook-events';

export function EditWebhookDialog({
  webhook,
  onSaved,
  onClose,
}: {
  webhook: Webhook;
  onSaved: (message: string) => void;
  onClose: () => void;
}) {
  const [url, setUrl] = useState(webhook.url);
  const [description, setDescription] = useState(webhook.description);
  const [events, setEvents] = useState<readonly WebhookEvent[]>(webhook.events);
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
        <div class="field">
          <label for="edit-webhook-url">URL</label>
          <input
            id="edit-webhook-url"
            type="url"
            required
            maxLength={2048}
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="edit-webhook-description">Description</label>
          <input
            id="edit-webhook-description"
            maxLength={1000}
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        </div>
        <CheckboxGroup legend="Events" options={WEBHOOK_EVENTS} chosen={events} onChange={setEvents} />
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
