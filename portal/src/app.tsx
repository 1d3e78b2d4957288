/**
 * The portal's frame: the team's brand, the sign-in page until a session is held, then the navigation
 * and the page the URL's fragment names. The session lives in an HttpOnly cookie the page never reads;
 * what the page keeps of it (the user, the CSRF proof) stays in memory. The API reference is a page of
 * its own (reference.html), linked when the team published one.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from '../../console/src/api-error';
import { ErrorMessage } from '../../console/src/components/error-message';
import { href, useRoute, type Route } from '../../console/src/route';
import { useApi } from '../../console/src/use-api';
import { applyBranding } from './branding';
import { call, holdCsrfToken, PORTAL_ROOT, SIGNED_OUT_EVENT } from './portal-api';
import { PortalContext } from './portal-context';
import type { Branding, Me } from './portal-types';
import { FailuresPage } from './pages/failures';
import { KeyPage } from './pages/key';
import { KeysPage } from './pages/keys';
import { PlanPage } from './pages/plan';
import { SignInPage, type SignedOutReason } from './pages/sign-in';
import { UsagePage } from './pages/usage';

const NAVIGATION: readonly { section: string; label: string }[] = [
  { section: '', label: 'Keys' },
  { section: 'usage', label: 'Usage' },
  { section: 'plan', label: 'Plan and credits' },
  { section: 'failures', label: 'Failures' },
];

function Page({ route }: { route: Route }) {
  const [section = '', id] = route.segments;
  switch (section) {
    case '':
      return <KeysPage />;
    case 'keys':
      if (id !== undefined) return <KeyPage keyId={id} route={route} />;
      return <KeysPage />;
    case 'usage':
      return <UsagePage route={route} />;
    case 'plan':
      return <PlanPage />;
    case 'failures':
      return <FailuresPage />;
  }
  return (
    <>
      <h1 tabIndex={-1}>Page not found</h1>
      <p>
        Nothing lives at this address. <a href={href()}>Go to your keys</a>.
      </p>
    </>
  );
}

/** The portal's brand and ways in, or why there is no portal (404: the team has not opened it). */
function Closed({ error }: { error: ApiError | undefined }) {
  if (error?.status === 404)
    return (
      <main id="main" class="sign-in">
        <h1>This portal is not open</h1>
        <p>The team behind this API has not opened its developer portal.</p>
      </main>
    );
  return (
    <main id="main">
      <ErrorMessage error={error} />
      {!error && <p role="status">Loading…</p>}
    </main>
  );
}

export function App() {
  const [reason, setReason] = useState<SignedOutReason>();
  const [attempt, setAttempt] = useState(0);
  const route = useRoute();
  const main = useRef<HTMLElement>(null);
  const branding = useApi((signal) => call<Branding>('GET', '/branding', { signal }), []);
  const me = useApi(
    (signal) =>
      call<Me>('GET', '/me', { signal }).catch((error: ApiError) => {
        if (error.status === 401) return undefined;
        throw error;
      }),
    [attempt],
  );
  const brand = me.data?.branding ?? branding.data;
  useEffect(() => {
    if (brand) applyBranding(brand);
  }, [brand]);
  useEffect(() => holdCsrfToken(me.data?.csrfToken), [me.data]);
  useEffect(() => {
    const ended = () => {
      setReason('ended');
      setAttempt((n) => n + 1);
    };
    window.addEventListener(SIGNED_OUT_EVENT, ended);
    return () => window.removeEventListener(SIGNED_OUT_EVENT, ended);
  }, []);
  // A new page takes the focus to its heading; the first one leaves it at the top, for the skip link.
  const section = route.segments.slice(0, 2).join('/');
  const loaded = useRef(false);
  useEffect(() => {
    if (loaded.current) main.current?.querySelector<HTMLElement>('h1')?.focus();
    if (me.data) loaded.current = true;
  }, [section]);

  if (!brand || me.loading) return <Closed error={branding.error ?? me.error} />;
  if (!me.data) return <SignInPage branding={brand} reason={reason} />;
  const signOut = async () => {
    await call('POST', '/sign-out').catch(() => undefined);
    holdCsrfToken(undefined);
    setReason('signed_out');
    setAttempt((n) => n + 1);
  };
  const user = me.data.user;
  const current = route.segments[0] === 'keys' ? '' : (route.segments[0] ?? '');
  return (
    <PortalContext.Provider value={me.data}>
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
        <span class="brand">
          {brand.logoUrl && <img src={brand.logoUrl} alt="" class="logo" />}
          {brand.title}
        </span>
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
            {brand.apiReference && (
              <li>
                <a href={`${PORTAL_ROOT}/reference`}>API reference</a>
              </li>
            )}
          </ul>
        </nav>
        {brand.supportUrl && (
          <a class="support" href={brand.supportUrl} rel="noreferrer">
            Contact support
          </a>
        )}
        <span class="who">{user.email ?? user.name ?? user.id}</span>
        <button type="button" class="secondary" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" ref={main}>
        <Page key={section} route={route} />
      </main>
    </PortalContext.Provider>
  );
}
