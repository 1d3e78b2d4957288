/**
 * The signed-in token itself: what it is, until when it works, and every scope with what it allows,
 * held or not, so an administrator knows what to ask for before meeting a control that needs it.
 */
import { useAccess } from '../access';
import { PageTitle } from '../components/page-title';
import { formatTime } from '../format';
import { SCOPE_TEXT, SCOPES } from '../scopes';

export function AccessPage() {
  const { whoami } = useAccess();
  return (
    <>
      <PageTitle title="Your access" />
      {!whoami && <p role="status">Loading…</p>}
      {whoami && (
        <>
          <dl class="details">
            <dt>Signed in with</dt>
            <dd>
              {whoami.type === 'root'
                ? 'The root token (ROOT_TOKEN): every scope'
                : `The admin token ${whoami.name}`}
            </dd>
            {whoami.tokenId && (
              <>
                <dt>Token id</dt>
                <dd class="mono">{whoami.tokenId}</dd>
              </>
            )}
            <dt>Works until</dt>
            <dd>{whoami.expiresAt ? formatTime(whoami.expiresAt) : 'it is revoked'}</dd>
          </dl>
          <table class="data scopes">
            <caption>Scopes</caption>
            <thead>
              <tr>
                <th scope="col">Scope</th>
                <th scope="col">Allows</th>
                <th scope="col">This token</th>
              </tr>
            </thead>
            <tbody>
              {SCOPES.map((scope) => {
                const held = whoami.scopes.includes(scope);
                return (
                  <tr key={scope} data-scope={scope}>
                    <td class="mono" data-label="Scope">
                      {scope}
                    </td>
                    <td data-label="Allows">{SCOPE_TEXT[scope]}</td>
                    <td data-label="This token">{held ? 'Holds it' : 'Lacks it'}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <p class="help">
            Actions that need a scope this token lacks are shown disabled, with the scope they need. A token
            with tokens:write can make tokens with the scopes it holds (Admin tokens).
          </p>
        </>
      )}
    </>
  );
}
