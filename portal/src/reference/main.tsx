/**
 * The API reference page: the team's OpenAPI document rendered by swagger-ui (bundled here, in this
 * page's own script, which no other portal page loads). Its "try it" requests go to this origin, that
 * is through Tollgate, with the key the user pastes or a token the page mints of one of their keys,
 * kept in this page's memory only (never swagger-ui's persisted authorization, storage or a URL).
 * docs/decisions/0106-portal-api-reference.md.
 */
import 'swagger-ui-dist/swagger-ui.css';
import '../../../console/src/styles.css';
import '../styles.css';
import './reference.css';
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import SwaggerUI from 'swagger-ui-dist/swagger-ui-es-bundle.js';
import { ErrorMessage } from '../../../console/src/components/error-message';
import { PageTitle } from '../../../console/src/components/page-title';
import { formatTime } from '../../../console/src/format';
import { useAction, useApi } from '../../../console/src/use-api';
import { applyBranding } from '../branding';
import { mintToken } from '../mint-token';
import { call, holdCsrfToken, PORTAL_ROOT } from '../portal-api';
import type { Branding, Me, PortalKeyList } from '../portal-types';
import { tryItThroughTollgate } from './try-it';

/** What "try it" sends as the key: read by swagger-ui's request interceptor at each request. */
let credential = '';

function Reference({ document }: { document: object }) {
  const node = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!node.current) return;
    SwaggerUI({
      domNode: node.current,
      spec: tryItThroughTollgate(document, location.origin),
      validatorUrl: null,
      requestInterceptor: (request) => {
        if (credential) request.headers['x-api-key'] = credential;
        return request;
      },
    });
    // swagger-ui labels its server list with a text beside it, not for it: named for screen readers
    // whenever it (re)draws the list.
    const root = node.current;
    const labelServers = () => {
      const servers = root.querySelector('select#servers');
      if (servers && !servers.hasAttribute('aria-label')) servers.setAttribute('aria-label', 'Server');
    };
    const observer = new MutationObserver(labelServers);
    observer.observe(root, { childList: true, subtree: true });
    return () => observer.disconnect();
  }, [document]);
  return <div ref={node} class="reference" />;
}

/** An hour of trying: long enough for a session with the reference, short if the page is left open. */
const TRY_TOKEN_SECONDS = 3_600;

function Credential() {
  const [typed, setTyped] = useState('');
  const [inUse, setInUse] = useState<string>();
  const keys = useApi((signal) => call<PortalKeyList>('GET', '/keys', { signal }), []);
  const usable = (keys.data?.keys ?? []).filter((key) => key.enabled);
  const [keyId, setKeyId] = useState('');
  const chosen = usable.find((key) => key.id === keyId) ?? usable[0];
  const mint = useAction();
  return (
    <section aria-labelledby="try-title" class="try-it">
      <h2 id="try-title">Try the API</h2>
      <p>
        "Try it out" sends its requests through the gateway with a token of one of your keys or with the key
        you paste below, and they count in your usage like any other. Either stays in this page: it is gone
        when you leave it.
      </p>
      {chosen && (
        <div class="inline-form">
          <div class="field">
            <label for="try-key">Key to mint a token of</label>
            <select id="try-key" value={chosen.id} onChange={(e) => setKeyId(e.currentTarget.value)}>
              {usable.map((key) => (
                <option key={key.id} value={key.id}>
                  {key.name}
                </option>
              ))}
            </select>
          </div>
          <button
            type="button"
            disabled={mint.busy}
            onClick={async () => {
              const minted = await mint.run(() => mintToken(chosen.id, TRY_TOKEN_SECONDS));
              if (!minted) return;
              credential = minted.token;
              setTyped('');
              setInUse(`A token of ${chosen.name}, until ${formatTime(minted.expiresAt)}.`);
            }}
          >
            Use a token for an hour
          </button>
        </div>
      )}
      <ErrorMessage error={mint.error ?? keys.error} />
      <div class="field">
        <label for="try-secret">Your key's secret</label>
        <input
          id="try-secret"
          type="password"
          autocomplete="off"
          value={typed}
          onInput={(e) => {
            setTyped(e.currentTarget.value);
            credential = e.currentTarget.value.trim();
            setInUse(credential ? 'The secret you pasted.' : undefined);
          }}
        />
      </div>
      <p role="status">{inUse && `"Try it out" sends: ${inUse}`}</p>
    </section>
  );
}

function ReferencePage() {
  const branding = useApi((signal) => call<Branding>('GET', '/branding', { signal }), []);
  const document = useApi((signal) => call<object>('GET', '/reference', { signal }), []);
  // The session's CSRF proof, which minting a token (a write) carries.
  const me = useApi((signal) => call<Me>('GET', '/me', { signal }), []);
  useEffect(() => holdCsrfToken(me.data?.csrfToken), [me.data]);
  useEffect(() => {
    if (branding.data) applyBranding(branding.data);
  }, [branding.data]);
  const brand = branding.data;
  const title = brand?.title ?? 'Developer portal';
  return (
    <>
      <header class="top">
        <span class="brand">
          {brand?.logoUrl && <img src={brand.logoUrl} alt="" class="logo" />}
          {title}
        </span>
        <nav aria-label="Main">
          <ul>
            <li>
              <a href={`${PORTAL_ROOT}/`}>Back to your keys</a>
            </li>
          </ul>
        </nav>
      </header>
      <main id="main">
        <PageTitle title="API reference" site={title} />
        {document.error?.status === 404 ? (
          <p>The team has not published its API reference yet.</p>
        ) : document.error?.status === 401 ? (
          <p>
            <a href={`${PORTAL_ROOT}/`}>Sign in</a> to read the API reference.
          </p>
        ) : (
          <ErrorMessage error={document.error} />
        )}
        {document.data && (
          <>
            <Credential />
            <Reference document={document.data} />
          </>
        )}
      </main>
    </>
  );
}

render(<ReferencePage />, window.document.getElementById('app')!);
