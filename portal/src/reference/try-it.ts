/**
 * The team's OpenAPI document, pointed at the gateway: every server becomes this origin with the
 * server's own path kept, so "try it" goes through Tollgate (and its limits, usage and CORS) with the
 * portal user's key, never straight to the team's backend.
 */
export function tryItThroughTollgate(document: object, origin: string): object {
  const servers = (document as { servers?: { url?: unknown }[] }).servers ?? [{ url: '/' }];
  const paths = new Set(
    servers.map((server) => {
      const url = typeof server.url === 'string' ? server.url : '/';
      // A templated server URL ({region}.example.com) names no path Tollgate could know: its root.
      const path = url.includes('{') ? '/' : new URL(url, origin).pathname;
      return path.replace(/\/$/, '');
    }),
  );
  return { ...document, servers: [...paths].map((path) => ({ url: origin + path })) };
}
