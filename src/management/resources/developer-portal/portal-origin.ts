import type { IncomingMessage } from 'node:http';
import type { TrustProxy } from '../../../config.js';
import { forwardedFacts } from '../../../proxy/forwarding-headers.js';

/**
 * The portal's origin as the browser sees it: the scheme and host the request came to (or those a
 * proxy TRUST_PROXY trusts names). Sign-in links point there, and a portal write's `Origin` must equal it.
 */
export function portalOrigin(req: IncomingMessage, trustProxy: TrustProxy): string {
  const { forwardedProto, forwardedHost } = forwardedFacts(req, trustProxy);
  return `${forwardedProto}://${forwardedHost ?? 'localhost'}`;
}

/** The request came over HTTPS, itself or as a proxy TRUST_PROXY trusts says: the portal's cookies are `Secure`. */
export const overHttps = (req: IncomingMessage, trustProxy: TrustProxy): boolean =>
  forwardedFacts(req, trustProxy).forwardedProto === 'https';

/** The portal's paths under MANAGEMENT_PREFIX. */
export const portalPaths = (prefix: string) => {
  const root = `${prefix}/tollgate/portal`;
  return {
    root,
    home: `${root}/`,
    signIn: `${root}/sign-in`,
    oidcStart: `${root}/sign-in/oidc`,
    oidcCallback: `${root}/sign-in/oidc/callback`,
    api: `${root}/api`,
  };
};
