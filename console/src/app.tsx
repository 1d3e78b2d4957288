/** The console's frame: sign-in until a token is held, then the navigation and the page the URL names. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { UNAUTHORIZED_EVENT } from './api';
import { href, useRoute, type Route } from './route';
import { useMissingScopes } from './scope-probe';
import { forgetToken, storedToken } from './session';
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
import { RouteFormPage } from './pages/route-form';
import { RouteListPage } from './pages/route-list';
import { SignInPage } from './pages/sign-in';
import { WebhookDeliveriesPage } from './pages/webhook-deliveries';
import { WebhookListPage } from './pages/webhook-list';

const NAVIGATION = [
  { section: '', label: 'Overview' },
  { section: 'keys', label: 'Keys' },
  { section: 'consumers', label: 'Consumers' },
  { section: 'plans', label: 'Plans' },
  { section: 'routes', label: 'Routes' },
  { section: 'webhooks', label: 'Webhooks' },
  { section: 'billing-exports', label: 'Billing exports' },
  { section: 'audit', label: 'Audit log' },
  { section: 'admin-tokens', label: 'Admin tokens' },
] as const;

function Page({ route }: { route: Route }) {
  const [section = '', id, action] = route.segments;
  switch (section) {
    case '':
      return <OverviewPage route={route} />;
    case 'keys':
      if (id === undefined) return <KeyListPage route={route} />;
      if (id === 'new') return <CreateKeyPage />;
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
      return <ConsumerDetailPage consumerId={id} />;
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
    case 'audit':
      return <AuditLogPage route={route} />;
    case 'admin-tokens':
      return <AdminTokensPage />;
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
  const missingScopes = useMissingScopes(signedIn);
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
    if (loaded.current && signedIn) main.current?.querySelector<HTMLElement>('h1')?.focus();
    loaded.current = true;
  }, [section, signedIn]);

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
                  {missingScopes[item.section] && (
                    <span class="nav-missing"> (needs {missingScopes[item.section]})</span>
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
        <Page key={section} route={route} />
      </main>
    </>
  );
}
