/**
 * The request target a client sent, reduced to the path the backend may see. The path is forwarded in
 * normal form (plans/normalised-path.ts), which decodes only unreserved characters: the checks here
 * still refuse anything a backend might later decode into a dot segment, in any spelling.
 */

/**
 * A `.` or `..` segment, plain or percent-encoded, between any of the separators a backend might
 * honour (`/`, `\`, and their encodings), or followed by `;` (path parameters, `/..;/`).
 */
const DOT_SEGMENT = /(?:^|[/\\]|%2f|%5c)(?:\.|%2e){1,2}(?:$|[/\\;]|%2f|%5c)/i;
/** Double encoding (`%252e`) decodes to the forms above on a second pass. */
const DOUBLE_ENCODED = /%25(?:2e|2f|5c)/i;

export interface RequestTarget {
  /** Path without query, as sent (the entry normalises it before anything reads it). */
  readonly path: string;
  /** `?…` or empty. */
  readonly search: string;
}

/**
 * The origin-form path and query of a request, or `undefined` when the target must be refused: an
 * absolute form naming a host other than the request's own, an asterisk or authority form.
 */
export function originForm(url: string, host: string | undefined): RequestTarget | undefined {
  let target = url;
  if (target.charCodeAt(0) !== 47 /* / */) {
    const scheme = /^https?:\/\//i.exec(target);
    if (scheme === null || host === undefined) return undefined;
    const authorityEnd = target.indexOf('/', scheme[0].length);
    const queryStart = target.indexOf('?', scheme[0].length);
    const end =
      authorityEnd === -1
        ? queryStart === -1
          ? target.length
          : queryStart
        : queryStart === -1
          ? authorityEnd
          : Math.min(authorityEnd, queryStart);
    if (target.slice(scheme[0].length, end).toLowerCase() !== host.toLowerCase()) return undefined;
    target = end === authorityEnd ? target.slice(end) : '/' + target.slice(end);
  }
  const q = target.indexOf('?');
  return q === -1 ? { path: target, search: '' } : { path: target.slice(0, q), search: target.slice(q) };
}

/** Whether a raw path could climb out of the upstream path prefix once a backend decodes it. */
export function hasDotSegment(path: string): boolean {
  // Most paths carry neither a dot nor an escape: skip the regular expressions for them.
  if (path.indexOf('.') === -1 && path.indexOf('%') === -1) return false;
  return DOT_SEGMENT.test(path) || DOUBLE_ENCODED.test(path);
}

/** `UPSTREAM_URL`'s path without its trailing slash: prefixed to every forwarded path. */
export function upstreamPrefix(upstream: URL): string {
  return upstream.pathname.replace(/\/+$/, '');
}
