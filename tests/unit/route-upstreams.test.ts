/** The backend pools of the route table: one per origin, kept while a table names it, closed once unused and unheld. */
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
