/**
 * A portal user's browser, over plain HTTP: it follows a sign-in link, keeps the session cookie, reads
 * the CSRF token from GET …/api/me, and sends writes with the portal's own Origin, as the portal's page
 * does. Each call can be changed the way an attacker would (no cookie, another Origin, no CSRF token).
 */
export interface PortalAnswer {
  readonly status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
  readonly body: any;
  readonly text: string;
  readonly headers: Headers;
}

export interface Tamper {
  /** The cookie sent; null: none. The user's own by default. */
  readonly cookie?: string | null;
  /** The Origin sent on a write; null: none. The portal's own by default. */
  readonly origin?: string | null;
  /** The CSRF header sent on a write; null: none. The session's by default. */
  readonly csrf?: string | null;
  readonly accept?: string;
  readonly headers?: Record<string, string>;
}

const READS = new Set(['GET', 'HEAD']);

export class PortalUser {
  /** `tollgate_portal=…` as the browser sends it back. */
  cookie: string | undefined;
  /** The Set-Cookie the sign-in answered, whole (its attributes). */
  setCookie: string | undefined;
  csrf: string | undefined;

  /** `base`: the portal's origin as the browser sees it, e.g. http://127.0.0.1:1234 (plus MANAGEMENT_PREFIX). */
  constructor(
    readonly origin: string,
    readonly prefix = '',
  ) {}

  /** Opens a sign-in link; resolves the answer (303 with the cookie when it worked). */
  async signIn(url: string, headers: Record<string, string> = {}): Promise<PortalAnswer> {
    const res = await fetch(url, { redirect: 'manual', headers });
    const setCookie = res.headers.get('set-cookie') ?? undefined;
    if (res.status === 303 && setCookie) {
      this.setCookie = setCookie;
      this.cookie = setCookie.split(';')[0];
      const me = await this.call('GET', '/me');
      this.csrf = me.body?.csrfToken as string | undefined;
    }
    return { status: res.status, body: undefined, text: await res.text(), headers: res.headers };
  }

  /** A call of the portal's API: `path` under /tollgate/portal/api. */
  call(method: string, path: string, body?: unknown, tamper: Tamper = {}): Promise<PortalAnswer> {
    return this.raw(method, `${this.prefix}/tollgate/portal/api${path}`, body, tamper);
  }

  /** Any path of the listener, with the portal user's cookie (and the page's headers on a write). */
  async raw(method: string, path: string, body?: unknown, tamper: Tamper = {}): Promise<PortalAnswer> {
    const cookie = tamper.cookie === undefined ? this.cookie : tamper.cookie;
    const origin = tamper.origin === undefined ? this.origin : tamper.origin;
    const csrf = tamper.csrf === undefined ? this.csrf : tamper.csrf;
    const write = !READS.has(method);
    const headers: Record<string, string> = {
      ...(cookie != null && { cookie }),
      ...(write && origin != null && { origin }),
      ...(write && csrf != null && { 'x-tollgate-csrf': csrf }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...(tamper.accept !== undefined && { accept: tamper.accept }),
      ...tamper.headers,
    };
    const res = await fetch(this.origin + path, {
      method,
      headers,
      redirect: 'manual',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  }
}
