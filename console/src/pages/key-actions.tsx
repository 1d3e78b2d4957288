/**
 * What an administrator does to a key: enable or disable it, roll its secret with a grace period, set
 * or clear its expiry, bind or unbind a plan, rename it (with its owner and metadata), delete it.
 * Each is one call of the management API; each failure shows the API's message in its dialog.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { Dialog, DialogButtons } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { ExpiryField } from '../components/expiry-field';
import { KeyIdentityFields } from '../components/key-identity-fields';
import { KeyRestrictionFields, linesOf, listOfLines } from '../components/key-restriction-fields';
import { MetadataField } from '../components/metadata-field';
import { SecretValue } from '../components/secret-value';
import { formatTime, isoToUtcInput, METADATA_HINT, parseJsonObject, utcInputToIso } from '../format';
import type { components } from '../api-types';
import type { KeyDetail, RollKeyResponse } from '../types';
import { useAction, useApi } from '../use-api';

type Open = 'roll' | 'expiry' | 'plan' | 'edit' | 'delete' | null;

export interface KeyActionsProps {
  readonly keyDetail: KeyDetail;
  /** After a change: reload the key and announce what happened. */
  readonly onChanged: (message: string) => void;
  readonly onDeleted: () => void;
}

const GRACE_PRESETS = [
  { seconds: 0, label: 'None: the previous secret stops working at once' },
  { seconds: 3_600, label: '1 hour' },
  { seconds: 86_400, label: '24 hours' },
  { seconds: 604_800, label: '7 days' },
] as const;

/** The key's own path parameters. */
const keyParams = (key: KeyDetail) => ({ path: { consumerApiKeyId: key.consumerApiKeyId } });

/** Changes some of a key's settings (PATCH). */
const patchKey = (key: KeyDetail, body: components['schemas']['UpdateKeyRequest']) =>
  ok(api.PATCH('/consumer-api-key/{consumerApiKeyId}', { params: keyParams(key), body }));

/** What each change dialog gets: the key, where to say what changed, and how to close. */
interface ChangeDialogProps {
  readonly keyDetail: KeyDetail;
  readonly onDone: (message: string) => void;
  readonly onClose: () => void;
}

/** Until when the previous secret works after a roll with `grace` seconds of grace. */
const previousSecretNote = (grace: number, rolled: RollKeyResponse) =>
  grace === 0
    ? 'The previous secret no longer works.'
    : `The previous secret keeps working until ${formatTime(rolled.previousSecretExpiresAt)}.`;

function RollDialog({
  keyDetail,
  onClose,
}: {
  keyDetail: KeyDetail;
  /** With what happened, once the secret was rolled; without, when cancelled. */
  onClose: (message?: string) => void;
}) {
  const [grace, setGrace] = useState(0);
  const [rolled, setRolled] = useState<RollKeyResponse>();
  const action = useAction();
  const message = rolled && `The secret was rolled. ${previousSecretNote(grace, rolled)}`;
  const shown = useRef<HTMLDivElement>(null);
  // The form that had the focus is gone: the new secret takes it.
  useEffect(() => shown.current?.querySelector('input')?.focus(), [rolled]);
  const roll = async (event: Event) => {
    event.preventDefault();
    const result = await action.run(() =>
      ok(
        api.POST('/consumer-api-key/{consumerApiKeyId}/roll', {
          params: keyParams(keyDetail),
          body: { gracePeriodSeconds: grace },
        }),
      ),
    );
    if (result) setRolled(result);
  };
  return (
    <Dialog open title="Roll the secret" onClose={() => onClose(message)}>
      {rolled ? (
        <div ref={shown}>
          <SecretValue value={rolled.secret} label="New secret (copy it now)" />
          <p>{previousSecretNote(grace, rolled)}</p>
          <div class="dialog-buttons">
            <button type="button" onClick={() => onClose(message)}>
              Done
            </button>
          </div>
        </div>
      ) : (
        <form method="dialog" onSubmit={roll}>
          <p>A new secret works at once on every replica. Usage and limits stay with the key.</p>
          <fieldset>
            <legend>The previous secret keeps working for</legend>
            {GRACE_PRESETS.map((p) => (
              <label key={p.seconds} class="radio">
                <input
                  type="radio"
                  name="grace"
                  value={String(p.seconds)}
                  checked={grace === p.seconds}
                  onChange={() => setGrace(p.seconds)}
                />
                {p.label}
              </label>
            ))}
          </fieldset>
          <DialogButtons error={action.error} onCancel={() => onClose()} destructive>
            <button type="submit" disabled={action.busy}>
              Roll secret
            </button>
          </DialogButtons>
        </form>
      )}
    </Dialog>
  );
}

function ExpiryDialog({ keyDetail, onDone, onClose }: ChangeDialogProps) {
  const [value, setValue] = useState(isoToUtcInput(keyDetail.expiresAt));
  const [invalid, setInvalid] = useState(false);
  const action = useAction();
  const save = async (expiresAt: string | null) => {
    const done = await action.run(() => patchKey(keyDetail, { expiresAt }));
    if (done)
      onDone(
        expiresAt === null ? 'The key no longer expires.' : `The key expires at ${formatTime(expiresAt)}.`,
      );
  };
  return (
    <Dialog open title="Expiry" onClose={onClose}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          const iso = utcInputToIso(value);
          setInvalid(iso === undefined);
          if (iso !== undefined) void save(iso);
        }}
      >
        <ExpiryField
          id="expires-at"
          label="Expires at (UTC)"
          value={value}
          onInput={setValue}
          help="From this instant every request with the key is refused (401 key_expired), on every replica."
        />
        {invalid && (
          <p class="error" role="alert">
            Enter a date and time.
          </p>
        )}
        <DialogButtons error={action.error} onCancel={onClose}>
          <button type="submit" disabled={action.busy}>
            Set expiry
          </button>
          {keyDetail.expiresAt !== null && (
            <button type="button" class="secondary" disabled={action.busy} onClick={() => void save(null)}>
              Remove expiry
            </button>
          )}
        </DialogButtons>
      </form>
    </Dialog>
  );
}

function PlanDialog({ keyDetail, onDone, onClose }: ChangeDialogProps) {
  const [planId, setPlanId] = useState(keyDetail.rateLimitId ?? '');
  const plans = useApi(
    (signal) => ok(api.GET('/rate-limit', { params: { query: { limit: 1000 } }, signal })),
    [],
  );
  const action = useAction();
  const id = keyDetail.consumerApiKeyId;
  const bind = async (event: Event) => {
    event.preventDefault();
    const done = await action.run(() =>
      ok(
        api.POST('/api-keys/apply-rate-limit', {
          body: { consumerApiKeyId: id, rateLimitId: planId.trim() },
        }),
      ),
    );
    if (done) onDone(`Plan ${planId.trim()} is bound to the key.`);
  };
  const unbind = async () => {
    const done = await action.run(() =>
      ok(api.POST('/api-keys/remove-rate-limit', { body: { consumerApiKeyId: id } })),
    );
    if (done) onDone('The key has no plan now.');
  };
  return (
    <Dialog open title="Plan" onClose={onClose}>
      <form method="dialog" onSubmit={bind}>
        <p>
          {keyDetail.rateLimitId
            ? `Bound to ${keyDetail.rateLimitId}. Binding another replaces it.`
            : 'No plan is bound.'}
        </p>
        <div class="field">
          <label for="plan-id">Plan</label>
          <input
            id="plan-id"
            list="plan-options"
            required
            value={planId}
            onInput={(e) => setPlanId(e.currentTarget.value)}
            autocomplete="off"
          />
          <datalist id="plan-options">
            {(plans.data?.rateLimits ?? []).map((p) => (
              <option key={p.rateLimitId} value={p.rateLimitId}>
                {p.description}
              </option>
            ))}
          </datalist>
        </div>
        <ErrorMessage error={plans.error} />
        <DialogButtons error={action.error} onCancel={onClose}>
          <button type="submit" disabled={action.busy}>
            Bind plan
          </button>
          {keyDetail.rateLimitId !== null && (
            <button type="button" class="secondary" disabled={action.busy} onClick={() => void unbind()}>
              Unbind plan
            </button>
          )}
        </DialogButtons>
      </form>
    </Dialog>
  );
}

function EditDialog({ keyDetail, onDone, onClose }: ChangeDialogProps) {
  const [name, setName] = useState(keyDetail.name);
  const [externalId, setExternalId] = useState(keyDetail.externalId ?? '');
  const [metadata, setMetadata] = useState(JSON.stringify(keyDetail.metadata, null, 2));
  const [origins, setOrigins] = useState(linesOf(keyDetail.allowedOrigins));
  const [addresses, setAddresses] = useState(linesOf(keyDetail.allowedAddresses));
  const [metadataError, setMetadataError] = useState<string>();
  const action = useAction();
  const save = async (event: Event) => {
    event.preventDefault();
    const parsed = parseJsonObject(metadata);
    if (parsed === undefined) {
      setMetadataError(METADATA_HINT);
      return;
    }
    setMetadataError(undefined);
    const body = {
      name,
      externalId: externalId.trim() === '' ? null : externalId.trim(),
      metadata: parsed,
      allowedOrigins: listOfLines(origins),
      allowedAddresses: listOfLines(addresses),
    };
    const done = await action.run(() => patchKey(keyDetail, body));
    if (done) onDone('The key is saved.');
  };
  return (
    <Dialog open title="Edit the key" onClose={onClose}>
      <form method="dialog" onSubmit={save}>
        <KeyIdentityFields
          idPrefix="edit"
          name={name}
          externalId={externalId}
          onName={setName}
          onExternalId={setExternalId}
          externalLabel="External ID"
          externalHelp="The owner's id in your own system; empty clears it."
        />
        <KeyRestrictionFields
          idPrefix="edit"
          origins={origins}
          addresses={addresses}
          onOrigins={setOrigins}
          onAddresses={setAddresses}
        />
        <MetadataField
          id="edit-metadata"
          rows={6}
          value={metadata}
          onInput={setMetadata}
          problem={metadataError}
        />
        <DialogButtons error={action.error} onCancel={onClose}>
          <button type="submit" disabled={action.busy}>
            Save
          </button>
        </DialogButtons>
      </form>
    </Dialog>
  );
}

function DeleteDialog({
  keyDetail,
  onDeleted,
  onClose,
}: {
  keyDetail: KeyDetail;
  onDeleted: () => void;
  onClose: () => void;
}) {
  const action = useAction();
  const remove = async () => {
    const done = await action.run(() =>
      ok(api.DELETE('/consumer-api-key/{consumerApiKeyId}', { params: keyParams(keyDetail) })),
    );
    if (done) onDeleted();
  };
  return (
    <Dialog open title={`Delete ${keyDetail.name}?`} onClose={onClose}>
      <p>
        Requests with this key are refused at once, on every replica, and its usage is deleted with it. This
        cannot be undone.
      </p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void remove()}>
          Delete key
        </button>
      </DialogButtons>
    </Dialog>
  );
}

export function KeyActions({ keyDetail, onChanged, onDeleted }: KeyActionsProps) {
  const [open, setOpen] = useState<Open>(null);
  const toggle = useAction();
  const done = (message: string) => {
    setOpen(null);
    onChanged(message);
  };
  const setEnabled = async () => {
    const enabled = !keyDetail.enabled;
    const result = await toggle.run(() => patchKey(keyDetail, { enabled }));
    if (result)
      onChanged(enabled ? 'The key is enabled.' : 'The key is disabled: its requests are refused with 403.');
  };
  return (
    <>
      <div class="toolbar" role="toolbar" aria-label="Key actions">
        <ScopedButton
          scope="keys:write"
          class="secondary"
          disabled={toggle.busy}
          onClick={() => void setEnabled()}
        >
          {keyDetail.enabled ? 'Disable' : 'Enable'}
        </ScopedButton>
        <ScopedButton scope="keys:write" class="secondary" onClick={() => setOpen('roll')}>
          Roll secret…
        </ScopedButton>
        <ScopedButton scope="keys:write" class="secondary" onClick={() => setOpen('expiry')}>
          Expiry…
        </ScopedButton>
        <ScopedButton scope="keys:write" class="secondary" onClick={() => setOpen('plan')}>
          Plan…
        </ScopedButton>
        <ScopedButton scope="keys:write" class="secondary" onClick={() => setOpen('edit')}>
          Edit…
        </ScopedButton>
        <ScopedButton scope="keys:write" class="danger" onClick={() => setOpen('delete')}>
          Delete…
        </ScopedButton>
      </div>
      <ErrorMessage error={toggle.error} />
      {open === 'roll' && (
        <RollDialog keyDetail={keyDetail} onClose={(message) => (message ? done(message) : setOpen(null))} />
      )}
      {open === 'expiry' && (
        <ExpiryDialog keyDetail={keyDetail} onDone={done} onClose={() => setOpen(null)} />
      )}
      {open === 'plan' && <PlanDialog keyDetail={keyDetail} onDone={done} onClose={() => setOpen(null)} />}
      {open === 'edit' && <EditDialog keyDetail={keyDetail} onDone={done} onClose={() => setOpen(null)} />}
      {open === 'delete' && (
        <DeleteDialog keyDetail={keyDetail} onDeleted={onDeleted} onClose={() => setOpen(null)} />
      )}
    </>
  );
}
