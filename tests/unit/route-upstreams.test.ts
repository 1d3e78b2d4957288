/**
 * The backend pools of the route table: one per origin, kept while a table names it, closed once unused and
 * unheld; and the table as the proxy reads it.
 */
import type { IncomingMessage } from 'node:http';
import { Metrics } from '../../src/ops/metrics.js';
import { forwardedPath, Routing } from '../../src/proxy/routing.js';
import { Upstreams } from '../../src/proxy/upstreams.js';

const A = 'http://127.0.0.1:1';
const B = 'http://127.0.0.1:2';

describe('Upstreams', () => {
  const options = { connections: 1, timeoutMs: 1_000 };

  it('keeps the pool of an origin every table names, and opens one per new origin', async () => {
    const upstreams = new Upstreams(options);
    const first = upstreams.use([A, A]).get(A)!;
    const next = upstreams.use([A, B]);
    expect(next.get(A)).toBe(first);
    expect(next.get(B)).not.toBe(first);
    expect(first.pool.closed).toBe(false);
    await upstreams.close();
    expect(first.pool.closed).toBe(true);
    expect(next.get(B)!.pool.closed).toBe(true);
  });

  it('closes a pool no route uses once the requests routed to it are finished, not before', () => {
    const upstreams = new Upstreams(options);
    const held = upstreams.use([A, B]).get(A)!;
    const idle = upstreams.use([A, B]).get(B)!;
    held.hold();
    held.hold();
    upstreams.use([]);
    expect(idle.pool.closed).toBe(true);
    expect(held.pool.closed).toBe(false);
    held.release();
    expect(held.pool.closed).toBe(false);
    held.release();
    expect(held.pool.closed).toBe(true);
  });

  it('keeps a pool a request holds open while a table still names it', () => {
    const upstreams = new Upstreams(options);
    const upstream = upstreams.use([A]).get(A)!;
    upstream.hold();
    upstream.release();
    expect(upstream.pool.closed).toBe(false);
  });
});

describe('Routing', () => {
  it('matches and strips a prefix stored before prefixes were normalised, as the normalised paths it is given', async () => {
    const routing = new Routing({
      config: {
        upstreamUrl: undefined,
        upstreamTimeoutMs: 1_000,
        corsAllowedOrigins: [],
        customerIdHeader: 'x-customer-id',
      },
      metrics: new Metrics(),
    });
    routing.apply([
      {
        routeId: 'old',
        match: { host: null, pathPrefix: '/%76%31/a%2fb', methods: null, caseInsensitive: false },
        upstreamUrl: A,
        stripPrefix: true,
        timeoutMs: null,
        cors: null,
      },
    ]);
    expect(routing.routeIdOf(undefined, 'GET', '/v1/a%2Fb/items')).toBe('old');
    const target = routing.route({ headers: {}, method: 'GET' } as IncomingMessage, '/v1/a%2Fb/items')!;
    expect(forwardedPath(target, '/v1/a%2Fb/items')).toBe('/items');
    target.upstream.release();
    await routing.close();
  });
});
