/**
 * Webhooks: the endpoints and their events, a new one (its signing secret shown once), edit, enable,
 * rotate the signing secret (the new one shown once), delete.
 */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { Dialog, DialogButtons } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { SecretValue } from '../components/secret-value';
import { WebhookFields, type WebhookFieldValues } from '../components/webhook-fields';
import { formatTime } from '../format';
import { href } from '../route';
import type { CreatedWebhook, Webhook } from '../types';
import { EditWebhookDialog } from './webhook-edit-dialog';
import { useAction, useApi } from '../use-api';

const EMPTY_WEBHOOK: WebhookFieldValues = { url: '', description: '', events: [] };

function CreateWebhookForm({ onCreated }: { onCreated: (webhook: CreatedWebhook) => void }) {
  const [values, setValues] = useState<WebhookFieldValues>(EMPTY_WEBHOOK);
  const { url, description, events } = values;
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const created = await action.run(() =>
      ok(api.POST('/tollgate/webhooks', { body: { url: url.trim(), description, events: [...events] } })),
    );
    if (created) {
      setValues({ ...values, url: '', description: '' });
      onCreated(created);
    }
  };
  return (
    <form class="form" onSubmit={submit} onInput={action.clear} aria-labelledby="new-webhook-title">
      <h2 id="new-webhook-title">New webhook</h2>
      <WebhookFields idPrefix="webhook" values={values} onChange={setValues} />
      <ErrorMessage error={action.error} />
      <div class="form-buttons">
        <ScopedButton scope="webhooks:write" type="submit" disabled={action.busy}>
          Create webhook
        </ScopedButton>
      </div>
    </form>
  );
}

function DeleteWebhookDialog({
  webhook,
  onDeleted,
  onClose,
}: {
  webhook: Webhook;
  onDeleted: (message: string) => void;
  onClose: () => void;
}) {
  const action = useAction();
  const remove = async () => {
    const done = await action.run(() =>
      ok(api.DELETE('/tollgate/webhooks/{webhookId}', { params: { path: { webhookId: webhook.id } } })),
    );
    if (done) onDeleted(`The webhook to ${webhook.url} is deleted.`);
  };
  return (
    <Dialog open title="Delete this webhook?" onClose={onClose}>
      <p>
        Nothing more is sent to <span class="mono">{webhook.url}</span>, and its delivery log goes with it.
        This cannot be undone.
      </p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void remove()}>
          Delete webhook
        </button>
      </DialogButtons>
    </Dialog>
  );
}

function RotateSecretDialog({
  webhook,
  onRotated,
  onClose,
}: {
  webhook: Webhook;
  onRotated: (rotated: CreatedWebhook) => void;
  onClose: () => void;
}) {
  const action = useAction();
  const rotate = async () => {
    const rotated = await action.run(() =>
      ok(
        api.POST('/tollgate/webhooks/{webhookId}/rotate-secret', {
          params: { path: { webhookId: webhook.id } },
        }),
      ),
    );
    if (rotated) onRotated(rotated);
  };
  return (
    <Dialog open title="Rotate this webhook’s signing secret?" onClose={onClose}>
      <p>
        A new secret replaces the old one at once: every delivery to <span class="mono">{webhook.url}</span>{' '}
        from now on, retries included, is signed with it. Give the receiver the new secret right away.
      </p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void rotate()}>
          Rotate secret
        </button>
      </DialogButtons>
    </Dialog>
  );
}

export function WebhookListPage() {
  const webhooks = useApi((signal) => ok(api.GET('/tollgate/webhooks', { signal })), []);
  const [created, setCreated] = useState<CreatedWebhook>();
  const [deleting, setDeleting] = useState<Webhook>();
  const [editing, setEditing] = useState<Webhook>();
  const [rotating, setRotating] = useState<Webhook>();
  const [message, setMessage] = useState('');
  const toggle = useAction();
  const setEnabled = async (webhook: Webhook, enabled: boolean) => {
    const done = await toggle.run(() =>
      ok(
        api.PATCH('/tollgate/webhooks/{webhookId}', {
          params: { path: { webhookId: webhook.id } },
          body: { enabled },
        }),
      ),
    );
    if (done) {
      setMessage(`The webhook to ${webhook.url} is ${enabled ? 'enabled' : 'disabled'}.`);
      webhooks.reload();
    }
  };
  return (
    <>
      <PageTitle title="Webhooks" />
      <p class="status-message" role="status">
        {message}
      </p>
      {created && (
        <div class="created">
          <SecretValue value={created.secret} label={`Signing secret of the webhook to ${created.url}`} />
          <p class="help">
            Copy it now: it is shown this once. Receivers check each delivery’s signature with it.
          </p>
        </div>
      )}
      <ErrorMessage error={webhooks.error ?? toggle.error} />
      {webhooks.loading && !webhooks.data && <p role="status">Loading webhooks…</p>}
      {webhooks.data &&
        (webhooks.data.webhooks.length === 0 ? (
          <p>No webhook yet.</p>
        ) : (
          <table class="data">
            <caption class="visually-hidden">Webhooks</caption>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">State</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {webhooks.data.webhooks.map((w) => (
                <tr key={w.id} data-webhook-id={w.id}>
                  <td data-label="URL">
                    <a class="mono" href={href('webhooks', w.id)}>
                      {w.url}
                    </a>
                    {w.description && <div class="muted small">{w.description}</div>}
                  </td>
                  <td data-label="Events" class="mono">
                    {w.events.join(', ')}
                  </td>
                  <td data-label="State">
                    {w.enabled
                      ? 'enabled'
                      : w.disabledAt
                        ? `disabled by Tollgate ${formatTime(w.disabledAt)}: ${w.disabledReason ?? ''}`
                        : 'disabled'}
                  </td>
                  <td class="row-actions">
                    <ScopedButton
                      scope="webhooks:write"
                      class="link"
                      disabled={toggle.busy}
                      aria-label={`${w.enabled ? 'Disable' : 'Enable'} ${w.url}`}
                      onClick={() => void setEnabled(w, !w.enabled)}
                    >
                      {w.enabled ? 'Disable' : 'Enable'}
                    </ScopedButton>
                    <ScopedButton
                      scope="webhooks:write"
                      class="link"
                      aria-label={`Edit ${w.url}`}
                      onClick={() => setEditing(w)}
                    >
                      Edit
                    </ScopedButton>
                    <ScopedButton
                      scope="webhooks:write"
                      class="link"
                      aria-label={`Rotate secret of ${w.url}`}
                      onClick={() => setRotating(w)}
                    >
                      Rotate secret
                    </ScopedButton>
                    <ScopedButton
                      scope="webhooks:write"
                      class="link danger-text"
                      aria-label={`Delete ${w.url}`}
                      onClick={() => setDeleting(w)}
                    >
                      Delete
                    </ScopedButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      <CreateWebhookForm
        onCreated={(webhook) => {
          setCreated(webhook);
          setMessage(`The webhook to ${webhook.url} is created.`);
          webhooks.reload();
        }}
      />
      {editing && (
        <EditWebhookDialog
          webhook={editing}
          onClose={() => setEditing(undefined)}
          onSaved={(text) => {
            setEditing(undefined);
            setMessage(text);
            webhooks.reload();
          }}
        />
      )}
      {rotating && (
        <RotateSecretDialog
          webhook={rotating}
          onClose={() => setRotating(undefined)}
          onRotated={(rotated) => {
            setRotating(undefined);
            setCreated(rotated);
            setMessage(`The webhook to ${rotated.url} has a new signing secret.`);
          }}
        />
      )}
      {deleting && (
        <DeleteWebhookDialog
          webhook={deleting}
          onClose={() => setDeleting(undefined)}
          onDeleted={(text) => {
            setDeleting(undefined);
            setCreated(undefined);
            setMessage(text);
            webhooks.reload();
          }}
        />
      )}
    </>
  );
}
