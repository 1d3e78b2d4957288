/**
 * The portal's settings: brand, limits, public plans, API reference and "Sign in with …", with the
 * brand's preview following the fields as they are typed. A token without portal:write reads them,
 * every control disabled.
 */
import { useState } from 'preact/hooks';
import { ScopedButton, useAccess } from '../access';
import { api, ok } from '../api';
import { formatTime } from '../format';
import {
  draftOf,
  MAX_KEYS,
  settingsBody,
  type Problems,
  type ReferenceKind,
  type SettingsDraft,
  type SettingsField,
} from '../portal-settings';
import type { PortalSettings } from '../types';
import { useAction } from '../use-api';
import { ErrorMessage } from './error-message';
import { PlanChoices } from './plan-choices';
import { PortalPreview } from './portal-preview';

const REFERENCE_KINDS: readonly { id: ReferenceKind; label: string }[] = [
  { id: 'none', label: 'None' },
  { id: 'url', label: 'An address Tollgate fetches' },
  { id: 'document', label: 'A pasted document' },
];

function TextField({
  field,
  label,
  draft,
  problems,
  disabled,
  onInput,
  help,
  type = 'text',
  placeholder,
}: {
  field: SettingsField;
  label: string;
  draft: SettingsDraft;
  problems: Problems;
  disabled: boolean;
  onInput: (field: SettingsField, value: string) => void;
  help?: string;
  type?: 'text' | 'url' | 'number' | 'password';
  placeholder?: string;
}) {
  const id = `portal-${field}`;
  const problem = problems[field];
  const described = [help && `${id}-help`, problem && `${id}-problem`].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        // Preact types each input type apart; any of these four takes the same attributes.
        type={type as 'text'}
        disabled={disabled}
        placeholder={placeholder}
        autocomplete="off"
        value={String(draft[field])}
        aria-invalid={problem ? true : undefined}
        aria-describedby={described || undefined}
        onInput={(e) => onInput(field, e.currentTarget.value)}
      />
      {help && (
        <p id={`${id}-help`} class="help">
          {help}
        </p>
      )}
      {problem && (
        <p id={`${id}-problem`} class="field-problem">
          {problem}
        </p>
      )}
    </div>
  );
}

/** "Fetch now": Tollgate fetches the saved address again, and says what came of it. */
function FetchReference({ saved, onFetched }: { saved: PortalSettings; onFetched: () => void }) {
  const action = useAction();
  const reference = saved.apiReference;
  if (!reference || !('url' in reference)) return null;
  const fetch = async () => {
    if (await action.run(() => ok(api.POST('/tollgate/portal/settings/api-reference/fetch')))) onFetched();
  };
  return (
    <div class="field">
      <p role="status" class="help">
        {reference.fetchError
          ? `The last fetch of ${reference.url} failed: ${reference.fetchError}`
          : reference.fetchedAt
            ? `Fetched ${formatTime(reference.fetchedAt)} from ${reference.url}.`
            : `${reference.url} has not been fetched yet.`}
      </p>
      <div>
        <ScopedButton
          scope="portal:write"
          class="secondary"
          disabled={action.busy}
          onClick={() => void fetch()}
        >
          Fetch now
        </ScopedButton>
      </div>
      <ErrorMessage error={action.error} />
    </div>
  );
}

export function PortalSettingsForm({
  saved,
  onSaved,
  onFetched,
  onEdited,
}: {
  saved: PortalSettings;
  /** The settings were saved (the draft now shows what the API answered). */
  onSaved: (message: string) => void;
  /** The API reference was fetched again: its outcome is in the settings. */
  onFetched: () => void;
  /** A field changed since: what the last save said no longer holds. */
  onEdited: () => void;
}) {
  const readOnly = useAccess().lacks('portal:write');
  const [draft, setDraft] = useState(() => draftOf(saved));
  const [problems, setProblems] = useState<Problems>({});
  const action = useAction();
  const set = (field: SettingsField, value: string | boolean | readonly string[]) => {
    setDraft((d) => ({ ...d, [field]: value }));
    setProblems((p) => ({ ...p, [field]: undefined }));
  };
  const common = { draft, problems, disabled: readOnly, onInput: set };

  const submit = async (event: Event) => {
    event.preventDefault();
    const { body, problems: found } = settingsBody(draft, saved);
    setProblems(found);
    if (Object.keys(found).length > 0) {
      action.fail('Some fields need a change before the settings can be saved: see the notes below them.');
      return;
    }
    const settings = await action.run(() => ok(api.PATCH('/tollgate/portal/settings', { body })));
    if (settings) {
      setDraft(draftOf(settings));
      onSaved('The portal’s settings are saved.');
    }
  };

  return (
    <div class="portal-settings">
      <form
        class="form"
        onSubmit={submit}
        onInput={() => {
          action.clear();
          onEdited();
        }}
        aria-labelledby="portal-settings-title"
        noValidate
      >
        <h2 id="portal-settings-title">Settings</h2>
        <div class="field inline">
          <input
            id="portal-enabled"
            type="checkbox"
            disabled={readOnly}
            checked={draft.enabled}
            onChange={(e) => set('enabled', e.currentTarget.checked)}
          />
          <label for="portal-enabled">The portal is open (its pages, API and sign-in links answer)</label>
        </div>
        <TextField
          field="title"
          label="Title"
          help="Shown on every page and in the browser’s tab."
          {...common}
        />
        <TextField
          field="logoUrl"
          label="Logo URL"
          type="url"
          placeholder="https://"
          help="An image shown beside the title; leave empty for none."
          {...common}
        />
        <TextField
          field="accentColor"
          label="Accent colour"
          placeholder="#1d4ed8"
          help="Buttons and links, as # and six hex digits; leave empty for the default blue."
          {...common}
        />
        <TextField
          field="supportUrl"
          label="Support URL"
          type="url"
          placeholder="https://"
          help="Where the portal’s “Contact support” link goes; leave empty for none."
          {...common}
        />
        <TextField
          field="maxKeysPerConsumer"
          label="Keys per consumer, at most"
          type="number"
          help={`How many keys a consumer may hold before the portal refuses another (0–${MAX_KEYS}).`}
          {...common}
        />
        <PlanChoices
          id="portal-public-plans"
          legend="Public plans"
          help="The plans a portal user may switch their consumer to."
          chosen={draft.publicPlans}
          disabled={readOnly}
          onChange={(plans) => set('publicPlans', plans)}
        />
        <fieldset>
          <legend>API reference</legend>
          {REFERENCE_KINDS.map((kind) => (
            <label class="checkbox" key={kind.id}>
              <input
                type="radio"
                name="portal-reference"
                disabled={readOnly}
                checked={draft.referenceKind === kind.id}
                onChange={() => set('referenceKind', kind.id)}
              />
              {kind.label}
            </label>
          ))}
          {draft.referenceKind === 'url' && (
            <>
              <TextField
                field="referenceUrl"
                label="OpenAPI document URL"
                type="url"
                placeholder="https://"
                help="Tollgate fetches it (JSON or YAML) when saved and serves it from the portal."
                {...common}
              />
              {draft.referenceUrl === draftOf(saved).referenceUrl && (
                <FetchReference saved={saved} onFetched={onFetched} />
              )}
            </>
          )}
          {draft.referenceKind === 'document' && (
            <div class="field">
              <label for="portal-referenceDocument">OpenAPI document (JSON)</label>
              <textarea
                id="portal-referenceDocument"
                class="mono"
                rows={8}
                disabled={readOnly}
                value={draft.referenceDocument}
                aria-invalid={problems.referenceDocument ? true : undefined}
                aria-describedby={problems.referenceDocument ? 'portal-referenceDocument-problem' : undefined}
                onInput={(e) => set('referenceDocument', e.currentTarget.value)}
              />
              {problems.referenceDocument && (
                <p id="portal-referenceDocument-problem" class="field-problem">
                  {problems.referenceDocument}
                </p>
              )}
            </div>
          )}
        </fieldset>
        <fieldset>
          <legend>Sign in with your identity provider (OpenID Connect)</legend>
          <div class="field inline">
            <input
              id="portal-oidc"
              type="checkbox"
              disabled={readOnly}
              checked={draft.oidc}
              onChange={(e) => set('oidc', e.currentTarget.checked)}
            />
            <label for="portal-oidc">Offer “Sign in with …” besides sign-in links</label>
          </div>
          {draft.oidc && (
            <>
              <TextField field="issuer" label="Issuer" type="url" placeholder="https://" {...common} />
              <TextField field="clientId" label="Client id" {...common} />
              <TextField
                field="clientSecret"
                label="Client secret"
                type="password"
                help={
                  saved.oidc?.clientSecretSet
                    ? 'Set (never shown). Type a new one to replace it; leave empty to keep it.'
                    : 'Not set. It is stored encrypted and never shown again.'
                }
                {...common}
              />
              <TextField
                field="claim"
                label="Claim"
                placeholder="org_id"
                help="The ID token claim that names the user’s account."
                {...common}
              />
              <TextField
                field="match"
                label="Compared with"
                help="externalId, or metadata.<field>: the consumer whose value equals the claim is the user’s."
                {...common}
              />
              {saved.oidc && (
                <p class="help">
                  Register this redirect URI with your provider:{' '}
                  <span class="mono">{saved.oidc.redirectUri}</span>
                </p>
              )}
            </>
          )}
        </fieldset>
        <ErrorMessage error={action.error} />
        <div class="form-buttons">
          <ScopedButton scope="portal:write" type="submit" disabled={action.busy}>
            Save settings
          </ScopedButton>
        </div>
      </form>
      <PortalPreview title={draft.title} logoUrl={draft.logoUrl.trim()} accentColor={draft.accentColor} />
    </div>
  );
}
