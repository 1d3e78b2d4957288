/** Each replica's copy of the route table: read again at every change, never twice at once, kept through an outage. */
import { jest } from '@jest/globals';
import { LocalKeyEvents } from '../../src/keys/key-events.js';
import { createLogger } from '../../src/ops/logger.js';
import type { RouteConfig } from '../../src/plans/route.js';
import { RouteTable } from '../../src/routes/route-table.js';

const route = (routeId: string): RouteConfig => ({
  routeId,
  match: { host: null, pathPrefix: `/${routeId}`, methods: null, caseInsensitive: false },
  upstreamUrl: 'http://127.0.0.1:1',
  stripPrefix: false,
  timeoutMs: null,
  cors: null,
});

/** A table whose reads the test answers one at a time. */
function table() {
  const reads: { resolve: (routes: RouteConfig[]) => void; reject: (err: Error) => void }[] = [];
  const told: string[][] = [];
  const lines: string[] = [];
  const logger = createLogger('info', {
    write: (line: string) => void lines.push(JSON.parse(line).msg as string),
  });
  const routes = new RouteTable(
    () => new Promise((resolve, reject) => reads.push({ resolve, reject })),
    logger,
  );
  routes.onChange((r) => told.push(r.map((x) => x.routeId)));
  return { routes, reads, told, lines };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('RouteTable', () => {
  it('reads again for every route change and every missed change, and for nothing else', async () => {
    const t = table();
    const events = new LocalKeyEvents();
    t.routes.follow(events);
    await events.publish({ kind: 'key', keyId: 'key_a' });
    await events.publish({ kind: 'plan', rateLimitId: 'gold' });
    expect(t.reads).toHaveLength(0);
    await events.publish({ kind: 'routes' });
    expect(t.reads).toHaveLength(1);
    t.reads[0]!.resolve([route('a')]);
    await settle();
    await events.publish({ kind: 'all' });
    t.reads[1]!.resolve([route('a'), route('b')]);
    await settle();
    expect(t.told).toEqual([['a'], ['a', 'b']]);
    t.routes.stop();
  });

  it('makes the changes announced during a read one more read after it, never two at once', async () => {
    const t = table();
    const first = t.routes.reload();
    const second = t.routes.reload();
    const third = t.routes.reload();
    expect(t.reads).toHaveLength(1);
    t.reads[0]!.resolve([route('old')]);
    await first;
    await settle();
    // The change that committed after the first read began is read by the next one.
    expect(t.reads).toHaveLength(2);
    t.reads[1]!.resolve([route('new')]);
    await Promise.all([second, third]);
    expect(t.reads).toHaveLength(2);
    expect(t.told).toEqual([['old'], ['new']]);
    t.routes.stop();
  });

  it('keeps the table in force while the database does not answer, says so once, and reads again by itself', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const t = table();
      const started = t.routes.start();
      t.reads[0]!.resolve([route('a')]);
      await started;
      const failed = t.routes.reload();
      t.reads[1]!.reject(new Error('database down'));
      await failed;
      expect(t.told).toEqual([['a']]);
      jest.advanceTimersByTime(1_000);
      expect(t.reads).toHaveLength(3);
      t.reads[2]!.reject(new Error('database down'));
      await settle();
      jest.advanceTimersByTime(1_000);
      t.reads[3]!.resolve([route('b')]);
      await settle();
      expect(t.told).toEqual([['a'], ['b']]);
      expect(t.lines).toEqual([
        'cannot read the route table; routing by the previous one and retrying',
        'reading the route table again',
      ]);
      t.routes.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('fails the start when the table cannot be read: routing without it would send requests to the wrong backend', async () => {
    const t = table();
    const started = t.routes.start();
    t.reads[0]!.reject(new Error('database down'));
    await expect(started).rejects.toThrow('database down');
  });
});
