/** An API error as the user reads it: the API's own message, the fields it names, and what a missing scope means. */
import type { ApiError } from '../api';

export function ErrorMessage({ error }: { error: ApiError | undefined }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <p>{error.message}</p>
      {error.details && error.details.length > 0 && (
        <ul>
          {error.details.map((d) => (
            <li key={d.field + d.message}>
              <code>{d.field}</code> {d.message}
            </li>
          ))}
        </ul>
      )}
      {error.code === 'insufficient_scope' && (
        <p>
          The token you signed in with does not hold the scope <code>{error.scope ?? 'this page needs'}</code>
          . Sign in with the root token or an admin token that holds it, or ask an administrator to create
          one.
        </p>
      )}
    </div>
  );
}
