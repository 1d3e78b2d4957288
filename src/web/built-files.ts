/**
 * Pages built with the project (the console, the portal): the files a build script wrote, read into
 * memory once at start-up and served from there. A request can only name a file the build produced:
 * no request path ever reaches the file system, so there is no path to traverse. Each file is gzipped
 * at its first gzipped request, not at start: the portal's API reference alone takes tens of
 * milliseconds of CPU at level 9, and most processes never serve it.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The builds name every file under assets/ by its content hash; the pages keep their names. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

export interface BuiltFile {
  readonly body: Buffer;
  /** The body gzipped, made at the first call and kept. */
  gzipped(): Buffer;
  readonly type: string;
  readonly cacheControl: string;
  readonly etag: string;
}

/** The built files by their path below the root (`index.html`, `assets/app-XXXXXXXX.js`). */
export type BuiltFiles = ReadonlyMap<string, BuiltFile>;

/** Reads a build's output; `undefined` when there is none (it was not built). */
export function loadBuiltFiles(directory: string): BuiltFiles | undefined {
  if (!existsSync(join(directory, 'index.html'))) return undefined;
  const files = new Map<string, BuiltFile>();
  for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const type = CONTENT_TYPES[extname(entry.name)];
    if (type === undefined) continue;
    const full = join(entry.parentPath, entry.name);
    const name = relative(directory, full).split(sep).join('/');
    const body = readFileSync(full);
    let gzipped: Buffer | undefined;
    files.set(name, {
      body,
      gzipped: () => (gzipped ??= gzipSync(body, { level: 9 })),
      type,
      cacheControl: name.startsWith('assets/') ? IMMUTABLE : REVALIDATE,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    });
  }
  return files;
}

/** Whether an Accept-Encoding header takes gzip (`gzip;q=0` refuses it). */
function acceptsGzip(header: string | undefined): boolean {
  const gzip = header?.split(',').find((part) => part.trim().split(';')[0]!.trim().toLowerCase() === 'gzip');
  return gzip !== undefined && !/;\s*q=0(\.0*)?\s*$/.test(gzip);
}

/** Answers a GET or HEAD with one built file: 304 for its etag, gzipped when the client takes it. */
export function sendBuiltFile(
  req: IncomingMessage,
  res: ServerResponse,
  file: BuiltFile,
  securityHeaders: Readonly<Record<string, string>>,
): void {
  const headers: Record<string, string | number> = {
    ...securityHeaders,
    'content-type': file.type,
    'cache-control': file.cacheControl,
    etag: file.etag,
    vary: 'accept-encoding',
  };
  if (req.headers['if-none-match'] === file.etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  const gzip = acceptsGzip(req.headers['accept-encoding']);
  const body = gzip ? file.gzipped() : file.body;
  res.writeHead(200, {
    ...headers,
    ...(gzip && { 'content-encoding': 'gzip' }),
    'content-length': body.length,
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
