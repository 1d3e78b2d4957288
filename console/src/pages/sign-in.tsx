/**
 * Sign-in with the root token or an admin token. The token is checked by asking the API who it is
 * (any valid token may, whatever its scopes), then kept in this tab's session storage.
 */
import { useState } from 'preact/hooks';
import { api, bearer, ok } from '../api';
import { ErrorMessage } from '../components/error-message';
import { storeToken } from '../session';
import { useAction } from '../use-api';

export function SignInPage({ notice, onSignedIn }: { notice: string | undefined; onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const candidate = token.trim();
    const accepted = await action.run(() =>
      ok(api.GET('/tollgate/whoami', { headers: bearer(candidate) }), { session: false }),
    );
    if (accepted) {
      storeToken(candidate);
      onSignedIn();
    }
  };
  return (
    <main id="main" class="sign-in">
      <h1 tabIndex={-1}>Tollgate console</h1>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <form method="post" onSubmit={submit} aria-describedby="token-help">
        <label for="token">Root token or admin token</label>
        <input
          id="token"
          name="token"
          type="password"
          required
          autocomplete="current-password"
          spellcheck={false}
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <p id="token-help" class="help">
          Kept in this browser tab only, until you sign out or close it.
        </p>
        <ErrorMessage error={action.error} />
        <button type="submit" disabled={action.busy || token.trim() === ''}>
          {action.busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
