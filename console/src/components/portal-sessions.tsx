/** The portal's active sessions (and links not used yet), filtered by consumer, each ended behind a confirmation. */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { formatTime } from '../format';
import type { PortalSession } from '../types';
import { useAction, useApi } from '../use-api';
import { Dialog, DialogButtons } from './dialog';
import { ErrorMessage } from './error-message';
import { ConsumerOptions } from './id-options';

const whoOf = (session: PortalSession) => session.user.email ?? session.user.name ?? session.user.id;

function EndSessionDialog({
  session,
  onEnded,
  onClose,
}: {
  session: PortalSession;
  onEnded: (message: string) => void;
  onClose: () => void;
}) {
  const action = useAction();
  const end = async () => {
    const done = await action.run(() =>
      ok(
        api.DELETE('/tollgate/portal/sessions/{sessionId}', {
          params: { path: { sessionId: session.sessionId } },
        }),
      ),
    );
    if (done) onEnded(`The session of ${whoOf(session)} is ended.`);
  };
  return (
    <Dialog open title="End this session?" onClose={onClose}>
      <p>
        {whoOf(session)} is signed out of the portal at once, on every replica
        {session.signedIn ? '' : ', and the link not used yet stops working'}.
      </p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void end()}>
          End session
        </button>
      </DialogButtons>
    </Dialog>
  );
}

export function PortalSessions({ generation }: { generation: number }) {
  const [filter, setFilter] = useState('');
  const [consumerId, setConsumerId] = useState('');
  const [ending, setEnding] = useState<PortalSession>();
  const [message, setMessage] = useState('');
  const sessions = useApi(
    (signal) =>
      ok(
        api.GET('/tollgate/portal/sessions', {
          params: { query: consumerId ? { consumerId } : {} },
          signal,
        }),
      ),
    [consumerId, generation],
  );
  const list = sessions.data?.sessions ?? [];
  return (
    <section aria-labelledby="portal-sessions-title">
      <h2 id="portal-sessions-title">Active sessions</h2>
      <form
        class="field field-buttons"
        onSubmit={(e) => {
          e.preventDefault();
          setConsumerId(filter.trim());
        }}
      >
        <div class="field">
          <label for="portal-sessions-consumer">Filter by consumer</label>
          <input
            id="portal-sessions-consumer"
            list="portal-sessions-consumer-options"
            autocomplete="off"
            value={filter}
            onInput={(e) => setFilter(e.currentTarget.value)}
          />
          <ConsumerOptions id="portal-sessions-consumer-options" />
        </div>
        <button type="submit" class="secondary">
          Filter
        </button>
      </form>
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={sessions.error} />
      {sessions.loading && !sessions.data && <p role="status">Loading sessions…</p>}
      {sessions.data &&
        (list.length === 0 ? (
          <p>{consumerId ? `No active session of ${consumerId}.` : 'No active session.'}</p>
        ) : (
          <table class="data">
            <caption class="visually-hidden">Active portal sessions</caption>
            <thead>
              <tr>
                <th scope="col">User</th>
                <th scope="col">Consumer</th>
                <th scope="col">Created</th>
                <th scope="col">Ends</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((s) => (
                <tr key={s.sessionId}>
                  <td data-label="User">
                    {whoOf(s)}
                    <div class="muted small">
                      <span class="mono">{s.user.id}</span>
                      {s.signedIn ? '' : ' · link not used yet'}
                    </div>
                  </td>
                  <td data-label="Consumer" class="mono">
                    {s.consumerId}
                  </td>
                  <td data-label="Created">{formatTime(s.createdAt)}</td>
                  <td data-label="Ends">{formatTime(s.expiresAt)}</td>
                  <td class="row-actions">
                    <ScopedButton
                      scope="portal:sessions"
                      class="link danger-text"
                      aria-label={`End the session of ${whoOf(s)}`}
                      onClick={() => {
                        setMessage('');
                        setEnding(s);
                      }}
                    >
                      End
                    </ScopedButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      {ending && (
        <EndSessionDialog
          session={ending}
          onClose={() => setEnding(undefined)}
          onEnded={(text) => {
            setEnding(undefined);
            setMessage(text);
            sessions.reload();
          }}
        />
      )}
    </section>
  );
}
