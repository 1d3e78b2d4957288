/** Billing exports: where closed usage buckets are sent (Stripe, OpenMeter, Lago, CloudEvents), create, delete. */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { Dialog, DialogButtons } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { formatNumber } from '../format';
import { href } from '../route';
import type { BillingExport } from '../types';
import { useAction, useApi } from '../use-api';

const TYPES: readonly BillingExport['type'][] = [
  'stripe',
  'stripe-v2',
  'metronome',
  'openmeter',
  'lago',
  'cloudevents',
];
const INTERVALS: readonly BillingExport['interval'][] = ['hour', 'day', 'minute'];
const SUBJECTS: readonly BillingExport['subject'][] = ['consumer', 'key'];

function CreateExportForm({ onCreated }: { onCreated: (created: BillingExport) => void }) {
  const [type, setType] = useState<BillingExport['type']>('stripe');
  const [url, setUrl] = useState('');
  const [streamUrl, setStreamUrl] = useState('');
  const [eventName, setEventName] = useState('');
  const [interval, setInterval] = useState<BillingExport['interval']>('hour');
  const [subject, setSubject] = useState<BillingExport['subject']>('consumer');
  const [credential, setCredential] = useState('');
  const [customerField, setCustomerField] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const body = {
      type,
      url: url.trim(),
      ...(type === 'stripe-v2' && streamUrl.trim() !== '' && { streamUrl: streamUrl.trim() }),
      eventName: eventName.trim(),
      interval,
      subject,
      ...(credential !== '' && { credential }),
      ...(customerField.trim() !== '' && { customerField: customerField.trim() }),
    };
    const created = await action.run(() => ok(api.POST('/tollgate/billing-exports', { body })));
    if (created) {
      setUrl('');
      setStreamUrl('');
      setEventName('');
      setCredential('');
      setCustomerField('');
      onCreated(created);
    }
  };
  return (
    <form class="form" onSubmit={submit} onInput={action.clear} aria-labelledby="new-export-title">
      <h2 id="new-export-title">New export</h2>
      <div class="field">
        <label for="export-type">Service</label>
        <select
          id="export-type"
          value={type}
          onChange={(e) => setType(e.currentTarget.value as BillingExport['type'])}
        >
          {TYPES.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="export-url">URL</label>
        <input
          id="export-url"
          type="url"
          required
          value={url}
          onInput={(e) => setUrl(e.currentTarget.value)}
          aria-describedby="export-url-help"
        />
        <p id="export-url-help" class="help">
          The service’s base URL (https://api.stripe.com, https://api.metronome.com), or the full endpoint for
          CloudEvents.
        </p>
      </div>
      {type === 'stripe-v2' && (
        <div class="field">
          <label for="export-stream-url">Stream URL</label>
          <input
            id="export-stream-url"
            type="url"
            value={streamUrl}
            onInput={(e) => setStreamUrl(e.currentTarget.value)}
            aria-describedby="export-stream-url-help"
          />
          <p id="export-stream-url-help" class="help">
            Where Stripe serves the meter event stream (https://meter-events.stripe.com); empty: the URL
            above.
          </p>
        </div>
      )}
      <div class="field">
        <label for="export-event">Event name</label>
        <input
          id="export-event"
          required
          value={eventName}
          onInput={(e) => setEventName(e.currentTarget.value)}
          aria-describedby="export-event-help"
        />
        <p id="export-event-help" class="help">
          Stripe: the meter’s event name; Metronome: the event type; Lago: the billable metric’s code;
          otherwise the event type.
        </p>
      </div>
      <div class="field">
        <label for="export-interval">Buckets of one</label>
        <select
          id="export-interval"
          value={interval}
          onChange={(e) => setInterval(e.currentTarget.value as BillingExport['interval'])}
        >
          {INTERVALS.map((i) => (
            <option key={i} value={i}>
              {i}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="export-subject">Usage of each</label>
        <select
          id="export-subject"
          value={subject}
          onChange={(e) => setSubject(e.currentTarget.value as BillingExport['subject'])}
        >
          {SUBJECTS.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="export-credential">Credential</label>
        <input
          id="export-credential"
          type="password"
          autocomplete="off"
          value={credential}
          onInput={(e) => setCredential(e.currentTarget.value)}
          aria-describedby="export-credential-help"
        />
        <p id="export-credential-help" class="help">
          Stripe secret key, Metronome API token, Lago API key or OpenMeter token: stored encrypted and never
          shown again.
        </p>
      </div>
      <div class="field">
        <label for="export-customer-field">Customer field</label>
        <input
          id="export-customer-field"
          value={customerField}
          onInput={(e) => setCustomerField(e.currentTarget.value)}
          aria-describedby="export-customer-field-help"
        />
        <p id="export-customer-field-help" class="help">
          The metadata member naming the customer; empty: the external ID.
        </p>
      </div>
      <ErrorMessage error={action.error} />
      <div class="form-buttons">
        <ScopedButton scope="billing:write" type="submit" disabled={action.busy}>
          Create export
        </ScopedButton>
      </div>
    </form>
  );
}

function DeleteExportDialog({
  billingExport,
  onDeleted,
  onClose,
}: {
  billingExport: BillingExport;
  onDeleted: (message: string) => void;
  onClose: () => void;
}) {
  const action = useAction();
  const remove = async () => {
    const done = await action.run(() =>
      ok(
        api.DELETE('/tollgate/billing-exports/{billingExportId}', {
          params: { path: { billingExportId: billingExport.id } },
        }),
      ),
    );
    if (done) onDeleted(`The ${billingExport.type} export is deleted.`);
  };
  return (
    <Dialog open title={`Delete the ${billingExport.type} export?`} onClose={onClose}>
      <p>
        No more usage is sent to <span class="mono">{billingExport.url}</span>, and its stored credential is
        erased. This cannot be undone.
      </p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void remove()}>
          Delete export
        </button>
      </DialogButtons>
    </Dialog>
  );
}

export function BillingExportListPage() {
  const exports = useApi((signal) => ok(api.GET('/tollgate/billing-exports', { signal })), []);
  const [deleting, setDeleting] = useState<BillingExport>();
  const [message, setMessage] = useState('');
  return (
    <>
      <PageTitle title="Billing exports" />
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={exports.error} />
      {exports.loading && !exports.data && <p role="status">Loading billing exports…</p>}
      {exports.data &&
        (exports.data.billingExports.length === 0 ? (
          <p>No billing export yet.</p>
        ) : (
          <table class="data">
            <caption class="visually-hidden">Billing exports</caption>
            <thead>
              <tr>
                <th scope="col">Export</th>
                <th scope="col">Event</th>
                <th scope="col">Buckets</th>
                <th scope="col">Credential</th>
                <th scope="col">Health</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {exports.data.billingExports.map((x) => (
                <tr key={x.id} data-export-id={x.id}>
                  <td data-label="Export">
                    <a href={href('billing-exports', x.id)}>{x.type}</a>
                    <div class="mono muted small">{x.url}</div>
                  </td>
                  <td data-label="Event" class="mono">
                    {x.eventName}
                  </td>
                  <td data-label="Buckets">
                    per {x.interval}, each {x.subject}
                  </td>
                  <td data-label="Credential">{x.hasCredential ? 'stored' : 'none'}</td>
                  <td data-label="Health">
                    {x.deliveryFailures === 0
                      ? 'working'
                      : `${formatNumber(x.deliveryFailures)} failed runs in a row`}
                  </td>
                  <td class="row-actions">
                    <ScopedButton
                      scope="billing:write"
                      class="link danger-text"
                      aria-label={`Delete ${x.type} export ${x.id}`}
                      onClick={() => setDeleting(x)}
                    >
                      Delete
                    </ScopedButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      <CreateExportForm
        onCreated={(created) => {
          setMessage(`The ${created.type} export is created.`);
          exports.reload();
        }}
      />
      {deleting && (
        <DeleteExportDialog
          billingExport={deleting}
          onClose={() => setDeleting(undefined)}
          onDeleted={(text) => {
            setDeleting(undefined);
            setMessage(text);
            exports.reload();
          }}
        />
      )}
    </>
  );
}
