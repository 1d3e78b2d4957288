/**
 * A real OpenID Provider for tests: the `oidc-provider` package (certified by the OpenID Foundation)
 * on a free port of 127.0.0.1, with one confidential client and accounts whose claims a test sets.
 * Its own development login and consent pages stand for the team's sign-in; `signInThrough` fills
 * them as a user's browser would.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface OpenIdProvider {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** The claims of each account by its login; an unknown login signs in with only `sub`. */
  readonly accounts: Map<string, Record<string, unknown>>;
  close(): Promise<void>;
}

export async function startOpenIdProvider(redirectUri: string): Promise<OpenIdProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const accounts = new Map<string, Record<string, unknown>>();
  const clientSecret = 'provider-secret-' + Math.random().toString(36).slice(2);
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'tollgate-portal',
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email'], profile: ['name', 'org_id'] },
    // The ID token carries the scopes' claims, as most providers' do for a claim an app matches on.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    cookies: { keys: ['provider-cookie-key'] },
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => ({ sub: id, ...accounts.get(id) }),
    }),
  });
  server.on('request', provider.callback());
  return {
    issuer,
    clientId: 'tollgate-portal',
    clientSecret,
    accounts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Cookies by host, as a browser keeps them (names and values only: enough for these flows). */
class CookieJar {
  private readonly byHost = new Map<string, Map<string, string>>();

  keep(url: URL, headers: Headers): void {
    const jar = this.byHost.get(url.host) ?? new Map<string, string>();
    for (const line of headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const [name, value] = [pair!.slice(0, at), pair!.slice(at + 1)];
      if (value === '' || /max-age=0/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    this.byHost.set(url.host, jar);
  }

  header(url: URL): string {
    return [...(this.byHost.get(url.host) ?? [])].map(([n, v]) => `${n}=${v}`).join('; ');
  }

  get(url: URL, name: string): string | undefined {
    return this.byHost.get(url.host)?.get(name);
  }
}

export interface BrowserVisit {
  /** Each URL the browser was sent to, in order. */
  readonly visited: string[];
  /** The last answer (the one that was not a redirect). */
  readonly last: { status: number; url: string; text: string; headers: Headers };
  readonly jar: CookieJar;
}

/**
 * A browser following redirects from `start`, submitting the provider's login form as `login` and
 * its consent form, until an answer that is not a redirect.
 */
export async function signInThrough(start: string, login: string): Promise<BrowserVisit> {
  const jar = new CookieJar();
  const visited: string[] = [];
  let url = new URL(start);
  let method = 'GET';
  let body: URLSearchParams | undefined;
  for (let step = 0; step < 20; step++) {
    visited.push(url.href);
    const res = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        cookie: jar.header(url),
        ...(body && { 'content-type': 'application/x-www-form-urlencoded' }),
      },
      body,
    });
    jar.keep(url, res.headers);
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      url = new URL(location, url);
      method = 'GET';
      body = undefined;
      continue;
    }
    const text = await res.text();
    const form = /<form[^>]*action="([^"]+)"[^>]*method="post"/.exec(text);
    if (res.status === 200 && form && url.origin !== new URL(start).origin) {
      const fields = new URLSearchParams();
      for (const [, name, value] of text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g))
        fields.set(name!, value!);
      if (fields.get('prompt') === 'login') {
        fields.set('login', login);
        fields.set('password', 'any');
      }
      url = new URL(form[1]!, url);
      method = 'POST';
      body = fields;
      continue;
    }
    return { visited, last: { status: res.status, url: url.href, text, headers: res.headers }, jar };
  }
  throw new Error(`no end to the redirects: ${visited.join(' → ')}`);
}
