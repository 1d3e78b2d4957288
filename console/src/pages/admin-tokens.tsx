/** Admin tokens: the list (never a secret), a new token with its scopes (its secret shown once), revoke. */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { CheckboxGroup } from '../components/checkbox-group';
import { Dialog, DialogButtons } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { SecretValue } from '../components/secret-value';
import { formatTime, utcInputToIso } from '../format';
import { SCOPES } from '../scopes';
import type { AdminScope, AdminToken, CreatedAdminToken } from '../types';
import { useAction, useApi } from '../use-api';

function CreateTokenForm({ onCreated }: { onCreated: (token: CreatedAdminToken) => void }) {
  const [name, setName] = useState('');
  // Nothing is ticked to start with: a box ticked for the administrator is one they untick by ticking it.
  const [scopes, setScopes] = useState<readonly AdminScope[]>([]);
  const [expiry, setExpiry] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const expiresAt = expiry === '' ? null : utcInputToIso(expiry);
    if (expiresAt === undefined) {
      action.fail('The expiry must be a date and time (UTC), or empty for a token that never expires.');
      return;
    }
    const created = await action.run(() =>
      ok(
        api.POST('/tollgate/admin-tokens', {
          body: { name: name.trim(), scopes: [...scopes], ...(expiresAt !== null && { expiresAt }) },
        }),
      ),
    );
    if (created) {
      setName('');
      setScopes([]);
      setExpiry('');
      onCreated(created);
    }
  };
  return (
    <form class="form" onSubmit={submit} onInput={action.clear} aria-labelledby="new-token-title">
      <h2 id="new-token-title">New token</h2>
      <div class="field">
        <label for="token-name">Name</label>
        <input
          id="token-name"
          required
          maxLength={200}
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </div>
      <CheckboxGroup legend="Scopes" options={SCOPES} chosen={scopes} onChange={setScopes} />
      <div class="field">
        <label for="token-expiry">Expires (UTC, optional)</label>
        <input
          id="token-expiry"
          type="datetime-local"
          step="1"
          value={expiry}
          onInput={(e) => setExpiry(e.currentTarget.value)}
          aria-describedby="token-expiry-help"
        />
        <p id="token-expiry-help" class="help">
          Empty: the token works until it is revoked. A token that expires itself can still be revoked sooner.
        </p>
      </div>
      <ErrorMessage error={action.error} />
      <div class="form-buttons">
        <ScopedButton scope="tokens:write" type="submit" disabled={action.busy}>
          Create token
        </ScopedButton>
      </div>
    </form>
  );
}

function RevokeDialog({
  token,
  onRevoked,
  onClose,
}: {
  token: AdminToken;
  onRevoked: (message: string) => void;
  onClose: () => void;
}) {
  const action = useAction();
  const revoke = async () => {
    const done = await action.run(() =>
      ok(api.DELETE('/tollgate/admin-tokens/{tokenId}', { params: { path: { tokenId: token.id } } })),
    );
    if (done) onRevoked(`The token ${token.name} is revoked: it is refused from now on.`);
  };
  return (
    <Dialog open title={`Revoke the token ${token.name}?`} onClose={onClose}>
      <p>Every call made with it is refused from now on, on every replica. This cannot be undone.</p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void revoke()}>
          Revoke token
        </button>
      </DialogButtons>
    </Dialog>
  );
}

export function AdminTokensPage() {
  const tokens = useApi((signal) => ok(api.GET('/tollgate/admin-tokens', { signal })), []);
  const [created, setCreated] = useState<CreatedAdminToken>();
  const [revoking, setRevoking] = useState<AdminToken>();
  const [message, setMessage] = useState('');
  return (
    <>
      <PageTitle title="Admin tokens" />
      <p class="status-message" role="status">
        {message}
      </p>
      {created && (
        <div class="created">
          <SecretValue value={created.secret} label={`Secret of the token ${created.name}`} />
          <p class="help">Copy it now: it is shown this once and stored only as a hash.</p>
        </div>
      )}
      <ErrorMessage error={tokens.error} />
      {tokens.loading && !tokens.data && <p role="status">Loading tokens…</p>}
      {tokens.data &&
        (tokens.data.adminTokens.length === 0 ? (
          <p>No admin token yet: only the root token can sign in.</p>
        ) : (
          <table class="data">
            <caption class="visually-hidden">Admin tokens</caption>
            <thead>
              <tr>
                <th scope="col">Token</th>
                <th scope="col">Scopes</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {tokens.data.adminTokens.map((t) => (
                <tr key={t.id} data-token-id={t.id}>
                  <td data-label="Token">
                    {t.name}
                    <div class="mono muted small">{t.id}</div>
                  </td>
                  <td data-label="Scopes" class="mono">
                    {t.scopes.join(', ')}
                  </td>
                  <td data-label="Created">{formatTime(t.createdAt)}</td>
                  <td data-label="Expires">{t.expiresAt ? formatTime(t.expiresAt) : 'never'}</td>
                  <td class="row-actions">
                    <ScopedButton
                      scope="tokens:write"
                      class="link danger-text"
                      aria-label={`Revoke ${t.name}`}
                      onClick={() => setRevoking(t)}
                    >
                      Revoke
                    </ScopedButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      <CreateTokenForm
        onCreated={(token) => {
          setCreated(token);
          setMessage(`The token ${token.name} is created.`);
          tokens.reload();
        }}
      />
      {revoking && (
        <RevokeDialog
          token={revoking}
          onClose={() => setRevoking(undefined)}
          onRevoked={(text) => {
            setRevoking(undefined);
            setCreated(undefined);
            setMessage(text);
            tokens.reload();
          }}
        />
      )}
    </>
  );
}
