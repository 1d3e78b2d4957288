/** The console's frame: sign-in until a token is held, then the navigation and the page the URL names. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { AccessContext, accessOf } from './access';
import { api, ok, UNAUTHORIZED_EVENT } from './api';
import { href, useRoute, type Route } from './route';
import { forgetToken, storedToken } from './session';
import type { AdminScope } from './types';
import { useApi } from './use-api';
import { ErrorMessage } from './components/error-message';
import { AccessPage } from './pages/access';
import { AdminTokensPage } from './pages/admin-tokens';
import { AuditLogPage } from './pages/audit-log';
import { BillingExportListPage } from './pages/billing-export-list';
import { BillingExportRunsPage } from './pages/billing-export-runs';
import { ConsumerDetailPage } from './pages/consumer-detail';
import { ConsumerFormPage } from './pages/consumer-form';
import { ConsumerListPage } from './pages/consumer-list';
import { CreateKeyPage } from './pages/create-key';
import { KeyDetailPage } from './pages/key-detail';
import { KeyListPage } from './pages/key-list';
import { OverviewPage } from './pages/overview';
import { PlanFormPage } from './pages/plan-form';
import { PlanListPage } from './pages/plan-list';
import { PortalPage } from './pages/portal';
import { RouteFormPage } from './pages/route-form';
import { RouteListPage } from './pages/route-list';
import { SignInPage } from './pages/sign-in';
import { WebhookDeliveriesPage } from './pages/webhook-deliveries';
import { WebhookListPage } from './pages/webhook-list';

/** Each section, and the scope its page reads with: a token without it sees so in the link. */
const NAVIGATION: readonly { section: string; label: string; reads?: AdminScope }[] = [
  { section: '', label: 'Overview', reads: 'usage:read' },
  { section: 'keys', label: 'Keys', reads: 'keys:read' },
  { section: 'consumers', label: 'Consumers', reads: 'keys:read' },
  { section: 'plans', label: 'Plans', reads: 'plans:read' },
  { section: 'routes', label: 'Routes', reads: 'routes:read' },
  { section: 'webhooks', label: 'Webhooks', reads: 'webhooks:read' },
  { section: 'billing-exports', label: 'Billing exports', reads: 'billing:read' },
  { section: 'portal', label: 'Portal', reads: 'portal:read' },
  { section: 'audit', label: 'Audit log', reads: 'audit:read' },
  { section: 'admin-tokens', label: 'Admin tokens', reads: 'tokens:write' },
  { section: 'access', label: 'Your access' },
];

function Page({ route }: { route: Route }) {
  const [section = '', id, action] = route.segments;
  switch (section) {
    case '':
      return <OverviewPage route={route} />;
    case 'keys':
      if (id === undefined) return <KeyListPage route={route} />;
      if (id === 'new') return <CreateKeyPage route={route} />;
      return <KeyDetailPage keyId={id} route={route} />;
    case 'plans':
      if (id === undefined) return <PlanListPage route={route} />;
      if (id === 'new') return <PlanFormPage />;
      if (action === 'edit') return <PlanFormPage planId={id} />;
      break;
    case 'consumers':
      if (id === undefined) return <ConsumerListPage route={route} />;
      if (id === 'new') return <ConsumerFormPage />;
      if (action === 'edit') return <ConsumerFormPage consumerId={id} />;
      return <ConsumerDetailPage consumerId={id} route={route} />;
    case 'routes':
      if (id === undefined) return <RouteListPage />;
      if (id === 'new') return <RouteFormPage />;
      if (action === 'edit') return <RouteFormPage routeId={id} />;
      break;
    case 'webhooks':
      if (id === undefined) return <WebhookListPage />;
      return <WebhookDeliveriesPage webhookId={id} route={route} />;
    case 'billing-exports':
      if (id === undefined) return <BillingExportListPage />;
      return <BillingExportRunsPage exportId={id} route={route} />;
    case 'portal':
      return <PortalPage />;
    case 'audit':
      return <AuditLogPage route={route} />;
    case 'admin-tokens':
      return <AdminTokensPage />;
    case 'access':
      return <AccessPage />;
  }
  return (
    <>
      <h1 tabIndex={-1}>Page not found</h1>
      <p>
        Nothing lives at this address. <a href={href()}>Go to the overview</a>.
      </p>
    </>
  );
}

export function App() {
  const [signedIn, setSignedIn] = useState(() => storedToken() !== null);
  const [notice, setNotice] = useState<string>();
  const route = useRoute();
  // What the token may do, asked again at each sign-in.
  const whoami = useApi(
    (signal) => (signedIn ? ok(api.GET('/tollgate/whoami', { signal })) : Promise.resolve(undefined)),
    [signedIn],
  );
  // Pages wait for it: a control is drawn once, enabled or not, never enabled first.
  const ready = signedIn && !whoami.loading && whoami.data !== undefined;
  const access = accessOf(ready ? whoami.data : undefined);
  const main = useRef<HTMLElement>(null);

  useEffect(() => {
    const refused = (event: Event) => {
      setNotice(`Signed out: ${(event as CustomEvent<string>).detail}`);
      setSignedIn(false);
    };
    window.addEventListener(UNAUTHORIZED_EVENT, refused);
    return () => window.removeEventListener(UNAUTHORIZED_EVENT, refused);
  }, []);

  // A new page (or signing in) takes the focus to its heading, so keyboard and screen-reader users
  // start there; a page just loaded leaves it at the top, where Tab reaches the skip link first.
  const section = route.segments.slice(0, 3).join('/');
  const loaded = useRef(false);
  useEffect(() => {
    if (loaded.current && ready) main.current?.querySelector<HTMLElement>('h1')?.focus();
    if (ready || !signedIn) loaded.current = true;
  }, [section, ready]);

  if (!signedIn) {
    return (
      <SignInPage
        notice={notice}
        onSignedIn={() => {
          setNotice(undefined);
          setSignedIn(true);
        }}
      />
    );
  }
  const current = route.segments[0] ?? '';
  return (
    <>
      <a
        class="skip-link"
        href="#main"
        onClick={(event) => {
          event.preventDefault();
          main.current?.querySelector<HTMLElement>('h1')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Tollgate</span>
        <nav aria-label="Main">
          <ul>
            {NAVIGATION.map((item) => (
              <li key={item.section}>
                <a
                  href={href(...(item.section ? [item.section] : []))}
                  aria-current={current === item.section ? 'page' : undefined}
                >
                  {item.label}
                  {item.reads && access.lacks(item.reads) && (
                    <span class="nav-missing"> (needs {item.reads})</span>
                  )}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            forgetToken();
            setNotice('You signed out.');
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" ref={main}>
        {/* Each page starts afresh: what one key's page announced is not said on the next's. */}
        {ready ? (
          <AccessContext.Provider value={access}>
            <Page key={section} route={route} />
          </AccessContext.Provider>
        ) : (
          <>
            <ErrorMessage error={whoami.error} />
            {!whoami.error && <p role="status">Loading…</p>}
          </>
        )}
      </main>
    </>
  );
}
