/**
 * What an administrator does to a key: enable or disable it, roll its secret with a grace period, set
 * or clear its expiry, bind or unbind a plan, rename it (with its owner and metadata), delete it.
 * Each is one call of the management API; each failure shows the API's message in its dialog.
 */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { Dialog, DialogButtons } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { ExpiryField } from '../components/expiry-field';
import { KeyIdentityFields } from '../components/key-identity-fields';
import { KeyRestrictionFields, linesOf, listOfLines } from '../components/key-restriction-fields';
import { MetadataField } from '../components/metadata-field';
import { DeleteKeyConfirmation } from '../components/delete-key-confirmation';
import { RollDialog } from '../components/roll-dialog';
import { formatTime, isoToUtcInput, METADATA_HINT, parseJsonObject, utcInputToIso } from '../format';
import type { components } from '../api-types';
import type { KeyDetail } from '../types';
import { useAction, useApi } from '../use-api';

type Open = 'roll' | 'expiry' | 'plan' | 'edit' | 'delete' | null;

export interface KeyActionsProps {
  readonly keyDetail: KeyDetail;
  /** After a change: reload the key and announce what happened. */
  readonly onChanged: (message: string) => void;
  readonly onDeleted: () => void;
}

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

/** Rolls the key's secret through the management API, with up to 7 days of grace. */
function RollKeyDialog({
  keyDetail,
  onClose,
}: {
  keyDetail: KeyDetail;
  onClose: (message?: string) => void;
}) {
  return (
    <RollDialog
      maxGraceSeconds={604_800}
      roll={(gracePeriodSeconds) =>
        ok(
          api.POST('/consumer-api-key/{consumerApiKeyId}/roll', {
            params: keyParams(keyDetail),
            body: { gracePeriodSeconds },
          }),
        )
      }
      onClose={onClose}
    />
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

function DeleteKeyDialog({
  keyDetail,
  onDeleted,
  onClose,
}: {
  keyDetail: KeyDetail;
  onDeleted: () => void;
  onClose: () => void;
}) {
  return (
    <DeleteKeyConfirmation
      name={keyDetail.name}
      remove={() => ok(api.DELETE('/consumer-api-key/{consumerApiKeyId}', { params: keyParams(keyDetail) }))}
      onDeleted={onDeleted}
      onClose={onClose}
    />
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
        <RollKeyDialog
          keyDetail={keyDetail}
          onClose={(message) => (message ? done(message) : setOpen(null))}
        />
      )}
      {open === 'expiry' && (
        <ExpiryDialog keyDetail={keyDetail} onDone={done} onClose={() => setOpen(null)} />
      )}
      {open === 'plan' && <PlanDialog keyDetail={keyDetail} onDone={done} onClose={() => setOpen(null)} />}
      {open === 'edit' && <EditDialog keyDetail={keyDetail} onDone={done} onClose={() => setOpen(null)} />}
      {open === 'delete' && (
        <DeleteKeyDialog keyDetail={keyDetail} onDeleted={onDeleted} onClose={() => setOpen(null)} />
      )}
    </>
  );
}
