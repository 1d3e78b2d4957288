/**
 * The developer portal (docs/guides/portal.md): its settings with a preview of its brand, sign-in links
 * for a consumer's people, and the sessions open now. Settings need portal:read (portal:write to
 * change), links and sessions portal:sessions.
 */
import { useState } from 'preact/hooks';
import { NeedsScope, useAccess } from '../access';
import { api, ok } from '../api';
import { ErrorMessage } from '../components/error-message';
import { PageTitle } from '../components/page-title';
import { PortalSessions } from '../components/portal-sessions';
import { PortalSettingsForm } from '../components/portal-settings-form';
import { PortalSignInLink } from '../components/portal-sign-in-link';
import { useApi } from '../use-api';

function PortalSettingsSection() {
  const [message, setMessage] = useState('');
  const settings = useApi((signal) => ok(api.GET('/tollgate/portal/settings', { signal })), []);
  return (
    <>
      <p class="status-message" role="status">
        {message}
      </p>
      <ErrorMessage error={settings.error} />
      {settings.loading && !settings.data && <p role="status">Loading the settings…</p>}
      {settings.data && (
        <PortalSettingsForm
          saved={settings.data}
          onSaved={(text) => {
            setMessage(text);
            settings.reload();
          }}
          onFetched={settings.reload}
          onEdited={() => setMessage('')}
        />
      )}
    </>
  );
}

export function PortalPage() {
  const access = useAccess();
  // A new link shows in the sessions list (as not used yet).
  const [links, setLinks] = useState(0);
  return (
    <>
      <PageTitle title="Portal" />
      {access.lacks('portal:read') ? (
        <NeedsScope scope="portal:read" what="Reading the portal’s settings" />
      ) : (
        <PortalSettingsSection />
      )}
      <PortalSignInLink onCreated={() => setLinks((n) => n + 1)} />
      {access.lacks('portal:sessions') ? (
        <NeedsScope scope="portal:sessions" what="Listing the portal’s sessions" />
      ) : (
        <PortalSessions generation={links} />
      )}
    </>
  );
}
