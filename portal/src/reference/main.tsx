/**
 * The API reference page: the team's OpenAPI document rendered by swagger-ui (bundled here, in this
 * page's own script, which no other portal page loads). Its "try it" requests go to this origin, that
 * is through Tollgate, with the key (or a token minted from it) the user pastes, kept in this page's
 * memory only. docs/decisions/0106-portal-api-reference.md.
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
import { useApi } from '../../../console/src/use-api';
import { applyBranding } from '../branding';
import { call, PORTAL_ROOT } from '../portal-api';
import type { Branding } from '../portal-types';
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

function Credential() {
  const [typed, setTyped] = useState('');
  return (
    <section aria-labelledby="try-title" class="try-it">
      <h2 id="try-title">Try the API</h2>
      <p>
        "Try it out" sends its requests through the gateway with the key below, and they count in your usage
        like any other. The key stays in this page: it is gone when you leave it.
      </p>
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
          }}
        />
      </div>
    </section>
  );
}

function ReferencePage() {
  const branding = useApi((signal) => call<Branding>('GET', '/branding', { signal }), []);
  const document = useApi((signal) => call<object>('GET', '/reference', { signal }), []);
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
