import { Redis } from 'ioredis';
import type { KeyChange } from '../../src/keys/key-events.js';
import { RedisKeyEvents } from '../../src/keys/redis-key-events.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { REDIS_URL, testKeyPrefix } from '../helpers/services.js';

const prefix = testKeyPrefix();
const logger = createLogger('silent');
const metrics = new Metrics();
const connections: Redis[] = [];
const connection = () => {
  const c = new Redis(REDIS_URL);
  connections.push(c);
  return c;
};

/** One replica's view: its own command and subscriber connections, and what its listener heard. */
async function replica(keyPrefix = prefix) {
  const events = new RedisKeyEvents(connection(), connection(), keyPrefix, logger, metrics);
  const heard: KeyChange[] = [];
  events.subscribe((c) => heard.push(c));
  await events.ready();
  return { events, heard };
}

const until = async (check: () => boolean, timeoutMs = 1_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('not within ' + timeoutMs + ' ms');
    await new Promise((r) => setTimeout(r, 5));
  }
};

afterAll(() => Promise.all(connections.map((c) => c.quit())));

describe('RedisKeyEvents', () => {
  it('tells every other replica within a second, and the publisher at once and only once', async () => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const change: KeyChange = { kind: 'key', keyId: 'key_deleted' };
    const started = Date.now();
    const publishing = a.events.publish(change);
    // The deleting replica's own cache hears of it before any round trip.
    expect(a.heard).toEqual([change]);
    await publishing;
    await until(() => b.heard.length > 0 && c.heard.length > 0);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(b.heard).toEqual([change]);
    expect(c.heard).toEqual([change]);
    // A change b publishes after reaches a behind the echo of a's own, had a taken it.
    const later: KeyChange = { kind: 'key', keyId: 'key_later' };
    await b.events.publish(later);
    await until(() => a.heard.length > 1);
    expect(a.heard).toEqual([change, later]);
  });

  it('carries plan changes', async () => {
    const [a, b] = [await replica(), await replica()];
    await a.events.publish({ kind: 'plan', rateLimitId: 'gold' });
    await until(() => b.heard.length > 0);
    expect(b.heard).toEqual([{ kind: 'plan', rateLimitId: 'gold' }]);
  });

  it('does not hear deployments under another prefix', async () => {
    const otherPrefix = testKeyPrefix();
    const [a, other, beside] = [await replica(), await replica(otherPrefix), await replica(otherPrefix)];
    await a.events.publish({ kind: 'key', keyId: 'key_x' });
    // A change of its own deployment, published after, reaches it behind a's, had it taken a's.
    const own: KeyChange = { kind: 'key', keyId: 'key_own' };
    await beside.events.publish(own);
    await until(() => other.heard.length > 0);
    expect(other.heard).toEqual([own]);
  });

  it('stops delivering after close', async () => {
    const [a, b] = [await replica(), await replica()];
    await b.events.close();
    await a.events.publish({ kind: 'key', keyId: 'key_y' });
    await new Promise((r) => setTimeout(r, 200));
    expect(b.heard).toEqual([]);
  });
});
