/**
 * Sign-in with the root token or an admin token. The token is checked with one read of the API (a
 * 403 still proves it valid: it only lacks that scope), then kept in this tab's session storage.
 */
import { useState } from 'preact/hooks';
import { ApiError, call } from '../api';
import { ErrorMessage } from '../components/error-message';
import { storeToken } from '../session';
import { useAction } from '../use-api';

export function SignInPage({ notice, onSignedIn }: { notice: string | undefined; onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const candidate = token.trim();
    const accepted = await action.run(async () => {
      try {
        await call('GET', '/consumer-api-key', { query: { limit: 1 }, token: candidate });
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 'insufficient_scope')) throw err;
      }
      return true;
    });
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
