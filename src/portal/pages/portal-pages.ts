/**
 * The developer portal's pages: the files scripts/build-portal.mjs wrote into dist/portal, served under
 * {MANAGEMENT_PREFIX}/tollgate/portal/ on the public listener (docs/decisions/0105-portal-pages.md).
 * Only the pages' own paths are answered here (`/`, `reference`, `assets/…`); every other path under
 * the portal (its API, the management calls) is left to the management app.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorResponse, type ErrorCode } from '../../errors.js';
import { TOLLGATE_ROOT } from '../../management/resources/index.js';
import type { BuiltFiles } from '../../web/built-files.js';
import { sendBuiltFile } from '../../web/built-files.js';

/** Where the portal lives, under MANAGEMENT_PREFIX. */
export const PORTAL_PATH = `${TOLLGATE_ROOT}/portal`;

/** What every page allows: this origin only, never framed, no form posted anywhere. */
const BASE_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
];

function securityHeaders(
  policy: readonly string[],
  styleSources = "'self'",
): Readonly<Record<string, string>> {
  return {
    'content-security-policy': [...BASE_POLICY, `style-src ${styleSources}`, ...policy].join('; '),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  };
}

/**
 * The portal's pages: the team's logo may live on its own https site; DOM sinks such as innerHTML
 * refuse strings, the pages render through the DOM API only.
 */
const PAGES_POLICY = ["img-src 'self' https:", "require-trusted-types-for 'script'", "trusted-types 'none'"];
const PAGES_HEADERS = securityHeaders(PAGES_POLICY);

/**
 * The headers of a page the server writes itself (src/portal/html-page.ts): the pages' own, its one
 * inline style allowed by its SHA-256 (base64) and no other.
 */
export function serverPageHeaders(styleHash: string): Readonly<Record<string, string>> {
  return securityHeaders(PAGES_POLICY, `'self' 'sha256-${styleHash}'`);
}

/** The built stylesheet and icon of the portal's pages, by their paths on the listener. */
export interface PageAssets {
  readonly stylesheet: string;
  readonly icon: string;
}

/**
 * What the built `index.html` links (`./assets/…`, hashed by the build), for the pages the server
 * writes itself; undefined when the portal was not built.
 */
export function pageAssetsOf(prefix: string, files: BuiltFiles | undefined): PageAssets | undefined {
  const index = files?.get('index.html')?.body.toString('utf8');
  const linked = (rel: string) =>
    new RegExp(`<link rel="${rel}" href="\\./(assets/[^"]+)"`).exec(index ?? '')?.[1];
  const stylesheet = linked('stylesheet');
  const icon = linked('icon');
  if (stylesheet === undefined || icon === undefined) return undefined;
  const root = prefix + PORTAL_PATH;
  return { stylesheet: `${root}/${stylesheet}`, icon: `${root}/${icon}` };
}

/**
 * The API reference, a document of its own so that its renderer's needs stay there: swagger-ui's
 * stylesheet draws its icons as data: images, and it renders the document's Markdown (sanitised by
 * DOMPurify) through innerHTML, which Trusted Types would refuse.
 */
const REFERENCE_HEADERS = securityHeaders(["img-src 'self' https: data:"]);

/** The pages by their path below the portal root, with the headers each is served with. */
const PAGES: ReadonlyMap<string, { file: string; headers: Readonly<Record<string, string>> }> = new Map([
  ['', { file: 'index.html', headers: PAGES_HEADERS }],
  ['reference', { file: 'reference.html', headers: REFERENCE_HEADERS }],
]);

/**
 * The portal pages' handler for the public listener: answers and returns true for a page or an asset
 * (raw path, no query), returns false for every other path. `files` undefined: the portal was not built,
 * and its pages are missing.
 */
export function createPortalPagesHandler(
  prefix: string,
  files: BuiltFiles | undefined,
): (req: IncomingMessage, res: ServerResponse, path: string) => boolean {
  const root = prefix + PORTAL_PATH;
  const fail = (res: ServerResponse, code: ErrorCode, extra: Record<string, string> = {}) => {
    const { status, headers, body } = errorResponse(code, {
      ...PAGES_HEADERS,
      'cache-control': 'no-store',
      ...extra,
    });
    res.writeHead(status, headers);
    res.end(body);
  };
  return (req, res, path) => {
    if (path === root) {
      res.writeHead(308, {
        ...PAGES_HEADERS,
        location: root + '/',
        'cache-control': 'no-store',
        'content-length': 0,
      });
      res.end();
      return true;
    }
    if (!path.startsWith(root + '/')) return false;
    const name = path.slice(root.length + 1);
    const page = PAGES.get(name);
    if (page === undefined && !name.startsWith('assets/')) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      fail(res, 'method_not_allowed', { allow: 'GET, HEAD' });
      return true;
    }
    const file = files?.get(page?.file ?? name);
    if (file === undefined) {
      fail(res, 'not_found');
      return true;
    }
    sendBuiltFile(req, res, file, page?.headers ?? PAGES_HEADERS);
    return true;
  };
}
