/**
 * One of the consumer's keys: its details, what its owner may do to it (rename, disable or enable,
 * roll with up to 24 hours of grace, restrict where it is used from, mint a short-lived token, delete),
 * and its usage. A key outside the consumer is answered 404 by the API, shown as not found.
 */
import { useState } from 'preact/hooks';
import { handOff, useHandoff } from '../../../console/src/handoff';
import { DeleteKeyConfirmation } from '../../../console/src/components/delete-key-confirmation';
import { Dialog, DialogButtons } from '../../../console/src/components/dialog';
import { ErrorMessage } from '../../../console/src/components/error-message';
import {
  KeyRestrictionFields,
  linesOf,
  listOfLines,
} from '../../../console/src/components/key-restriction-fields';
import { RollDialog, type Rolled } from '../../../console/src/components/roll-dialog';
import { formatTime, relativeTime } from '../../../console/src/format';
import { href, navigate, type Route } from '../../../console/src/route';
import { useAction, useApi } from '../../../console/src/use-api';
import { LeakNotice } from '../../../console/src/components/leak-notice';
import { MintTokenDialog } from '../components/mint-token-dialog';
import { PortalTitle } from '../components/portal-title';
import { PortalUsage } from '../components/portal-usage';
import { call, segment } from '../portal-api';
import type { PortalKey } from '../portal-types';

/** The portal allows a day of grace at most: a lost secret must not work for a week. */
const MAX_GRACE_SECONDS = 86_400;

type Open = 'rename' | 'restrict' | 'roll' | 'token' | 'delete' | null;

interface ChangeDialogProps {
  readonly keyOf: PortalKey;
  readonly save: (body: Partial<PortalKey>, message: string) => Promise<unknown>;
  readonly onClose: () => void;
}

function RenameDialog({ keyOf, save, onClose }: ChangeDialogProps) {
  const [name, setName] = useState(keyOf.name);
  const action = useAction();
  return (
    <Dialog open title="Rename the key" onClose={onClose}>
      <form
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          void action.run(() => save({ name }, `The key is now named ${name}.`));
        }}
      >
        <div class="field">
          <label for="rename-name">Name</label>
          <input
            id="rename-name"
            required
            maxLength={200}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </div>
        <DialogButtons error={action.error} onCancel={onClose}>
          <button type="submit" disabled={action.busy}>
            Rename
          </button>
        </DialogButtons>
      </form>
    </Dialog>
  );
}

function RestrictDialog({ keyOf, save, onClose }: ChangeDialogProps) {
  const [origins, setOrigins] = useState(linesOf(keyOf.allowedOrigins));
  const [addresses, setAddresses] = useState(linesOf(keyOf.allowedAddresses));
  const action = useAction();
  return (
    <Dialog open title="Where the key may be used" onClose={onClose}>
      <form
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          void action.run(() =>
            save(
              { allowedOrigins: listOfLines(origins), allowedAddresses: listOfLines(addresses) },
              'Where the key may be used from is saved.',
            ),
          );
        }}
      >
        <KeyRestrictionFields
          idPrefix="restrict"
          origins={origins}
          addresses={addresses}
          onOrigins={setOrigins}
          onAddresses={setAddresses}
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

function Details({ keyOf }: { keyOf: PortalKey }) {
  return (
    <dl class="details">
      <dt>Secret</dt>
      <dd class="mono">{keyOf.maskedSecret}</dd>
      <dt>State</dt>
      <dd>
        {keyOf.enabled
          ? 'Enabled'
          : keyOf.disabledByAdministrator
            ? 'Disabled by the team: its requests are refused. Ask them to enable it.'
            : 'Disabled: its requests are refused'}
      </dd>
      <dt>Created</dt>
      <dd>{formatTime(keyOf.createdAt)}</dd>
      <dt>Last used</dt>
      <dd>{relativeTime(keyOf.lastUsedAt)}</dd>
      <dt>Expires</dt>
      <dd>{keyOf.expiresAt ? formatTime(keyOf.expiresAt) : 'Never'}</dd>
      {keyOf.previousSecretExpiresAt && (
        <>
          <dt>Previous secret</dt>
          <dd>Works until {formatTime(keyOf.previousSecretExpiresAt)}</dd>
        </>
      )}
      <dt>Allowed origins</dt>
      <dd>{keyOf.allowedOrigins ? keyOf.allowedOrigins.join(', ') : 'Any'}</dd>
      <dt>Allowed addresses</dt>
      <dd>{keyOf.allowedAddresses ? keyOf.allowedAddresses.join(', ') : 'Any'}</dd>
    </dl>
  );
}

export function KeyPage({ keyId, route }: { keyId: string; route: Route }) {
  const path = `/keys/${segment(keyId)}`;
  const detail = useApi((signal) => call<PortalKey>('GET', path, { signal }), [path]);
  const { message, setMessage } = useHandoff();
  const [open, setOpen] = useState<Open>(null);
  const toggle = useAction();
  const key = detail.data;
  const save = async (body: Partial<PortalKey>, text: string) => {
    await call<PortalKey>('PATCH', path, { body });
    setOpen(null);
    setMessage(text);
    detail.reload();
  };
  const closeWith = (text?: string) => {
    setOpen(null);
    if (text) {
      setMessage(text);
      detail.reload();
    }
  };
  return (
    <>
      <PortalTitle title={key?.name ?? (detail.error?.status === 404 ? 'Key not found' : 'Key')} />
      <p class="mono muted">{keyId}</p>
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={detail.error} />
      {detail.error?.status === 404 && (
        <p>
          <a href={href()}>Back to your keys</a>
        </p>
      )}
      {!key && detail.loading && <p role="status">Loading the key…</p>}
      {key && (
        <>
          <div class="toolbar" role="toolbar" aria-label="Key actions">
            <button
              type="button"
              class="secondary"
              disabled={toggle.busy || key.disabledByAdministrator}
              title={key.disabledByAdministrator ? 'Only the team can enable a key it disabled' : undefined}
              onClick={() =>
                void toggle.run(() =>
                  save(
                    { enabled: !key.enabled },
                    key.enabled ? 'The key is disabled: its requests are refused.' : 'The key is enabled.',
                  ),
                )
              }
            >
              {key.enabled ? 'Disable' : 'Enable'}
            </button>
            <button type="button" class="secondary" onClick={() => setOpen('rename')}>
              Rename…
            </button>
            <button type="button" class="secondary" onClick={() => setOpen('restrict')}>
              Origins and addresses…
            </button>
            <button type="button" class="secondary" onClick={() => setOpen('roll')}>
              Roll secret…
            </button>
            <button
              type="button"
              class="secondary"
              disabled={!key.enabled}
              title={key.enabled ? undefined : 'Enable the key to mint a token of it'}
              onClick={() => setOpen('token')}
            >
              Mint a token…
            </button>
            <button type="button" class="danger" onClick={() => setOpen('delete')}>
              Delete…
            </button>
          </div>
          <ErrorMessage error={toggle.error} />
          {key.leak !== null && <LeakNotice leak={key.leak} />}
          <Details keyOf={key} />
          {open === 'rename' && <RenameDialog keyOf={key} save={save} onClose={() => setOpen(null)} />}
          {open === 'restrict' && <RestrictDialog keyOf={key} save={save} onClose={() => setOpen(null)} />}
          {open === 'roll' && (
            <RollDialog
              maxGraceSeconds={MAX_GRACE_SECONDS}
              roll={(gracePeriodSeconds) =>
                call<Rolled>('POST', `${path}/roll`, { body: { gracePeriodSeconds } })
              }
              onClose={closeWith}
            />
          )}
          {open === 'token' && <MintTokenDialog keyId={keyId} onClose={() => setOpen(null)} />}
          {open === 'delete' && (
            <DeleteKeyConfirmation
              name={key.name}
              remove={() => call('DELETE', path)}
              onDeleted={() => {
                handOff({
                  message: `The key ${key.name} is deleted: its requests are refused from now on.`,
                });
                navigate(href());
              }}
              onClose={() => setOpen(null)}
            />
          )}
          <PortalUsage
            route={route}
            segments={['keys', keyId]}
            path={`${path}/usage`}
            subject="This key"
            fileName={`usage-${keyId}`}
          />
        </>
      )}
    </>
  );
}
