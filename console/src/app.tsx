/** The console's frame: sign-in until a token is held, then the navigation and the page the URL names. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { UNAUTHORIZED_EVENT } from './api';
import { href, useRoute, type Route } from './route';
import { forgetToken, storedToken } from './session';
import { AuditLogPage } from './pages/audit-log';
import { CreateKeyPage } from './pages/create-key';
import { KeyDetailPage } from './pages/key-detail';
import { KeyListPage } from './pages/key-list';
import { OverviewPage } from './pages/overview';
import { PlanFormPage } from './pages/plan-form';
import { PlanListPage } from './pages/plan-list';
import { SignInPage } from './pages/sign-in';

const NAVIGATION = [
  { section: '', label: 'Overview' },
  { section: 'keys', label: 'Keys' },
  { section: 'plans', label: 'Plans' },
  { section: 'audit', label: 'Audit log' },
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
      if (id === undefined) return <PlanListPage />;
      if (id === 'new') return <PlanFormPage />;
      if (action === 'edit') return <PlanFormPage planId={id} />;
      break;
    case 'audit':
      return <AuditLogPage route={route} />;
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
        <Page route={route} />
      </main>
    </>
  );
}
