/**
 * The web console: the files scripts/build-console.mjs wrote into dist/console, read into memory once
 * at start-up and served from there under {MANAGEMENT_PREFIX}/tollgate/console/. A request can only
 * name a file the build produced: no request path ever reaches the file system, so there is no path
 * to traverse. Every answer carries the console's Content-Security-Policy and security headers
 * (docs/decisions/0017-web-console.md).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorResponse, type ErrorCode } from '../errors.js';
import { TOLLGATE_ROOT } from '../management/resources/index.js';
import { loadBuiltFiles, sendBuiltFile, type BuiltFiles } from '../web/built-files.js';

/** Where the console lives, under MANAGEMENT_PREFIX. */
export const CONSOLE_PATH = `${TOLLGATE_ROOT}/console`;

/** Scripts, styles, images and API calls from this origin only; no inline script or style; never framed. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  // The sign-in form is handled by script: it is never submitted, so the token never travels in a form.
  "form-action 'none'",
  "frame-ancestors 'none'",
  // DOM sinks such as innerHTML refuse strings: the console renders through the DOM API only.
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** The built files by their path below the console root (`index.html`, `assets/app-XXXXXXXX.js`). */
export type ConsoleFiles = BuiltFiles;

/** Reads the build's output; `undefined` when there is none (the console was not built). */
export const loadConsoleFiles: (directory: string) => ConsoleFiles | undefined = loadBuiltFiles;

/**
 * The console's request handler for the public listener: answers and returns true for a path under
 * the console (raw, no query), returns false for every other path. `files` undefined: the console is
 * on but was not built, and every file is missing.
 */
export function createConsoleHandler(
  prefix: string,
  files: ConsoleFiles | undefined,
): (req: IncomingMessage, res: ServerResponse, path: string) => boolean {
  const root = prefix + CONSOLE_PATH;
  const fail = (res: ServerResponse, code: ErrorCode, extra: Record<string, string> = {}) => {
    const { status, headers, body } = errorResponse(code, {
      ...SECURITY_HEADERS,
      'cache-control': 'no-store',
      ...extra,
    });
    res.writeHead(status, headers);
    res.end(body);
  };
  return (req, res, path) => {
    if (!path.startsWith(root) || (path.length > root.length && path.charCodeAt(root.length) !== 47) /* / */)
      return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      fail(res, 'method_not_allowed', { allow: 'GET, HEAD' });
      return true;
    }
    if (path.length === root.length) {
      res.writeHead(308, {
        ...SECURITY_HEADERS,
        location: root + '/',
        'cache-control': 'no-store',
        'content-length': 0,
      });
      res.end();
      return true;
    }
    const name = path.slice(root.length + 1);
    const file = files?.get(name === '' ? 'index.html' : name);
    if (file === undefined) {
      fail(res, 'not_found');
      return true;
    }
    sendBuiltFile(req, res, file, SECURITY_HEADERS);
    return true;
  };
}
