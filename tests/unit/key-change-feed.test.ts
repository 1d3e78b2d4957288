/** The recorded key changes each replica reads beside the change messages (a lost message costs one read). */
import { describe, expect, it } from '@jest/globals';
import type { KeyChange } from '../../src/keys/key-events.js';
import { KeyChangeFeed, type RecordedChange } from '../../src/keys/key-change-feed.js';
import { createLogger } from '../../src/ops/logger.js';

const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);

function feed(read: (since: Date) => Promise<readonly RecordedChange[]>, clock: () => number) {
  const told: KeyChange[] = [];
  const lines: string[] = [];
  const logger = createLogger('info', {
    write: (line: string) => void lines.push(JSON.parse(line).msg as string),
  });
  return { told, lines, feed: new KeyChangeFeed(read, (change) => told.push(change), logger, clock) };
}

describe('KeyChangeFeed', () => {
  it('tells each recorded change once, though reads overlap, as a key, a plan, a consumer or a route table change', async () => {
    let now = T0;
    const recorded: RecordedChange[] = [];
    const sinces: number[] = [];
    const f = feed(
      async (since) => {
        sinces.push(since.getTime());
        return recorded.filter((r) => r.time >= since);
      },
      () => now,
    );
    recorded.push({ id: 'aud_1', targetType: 'key', targetId: 'key_a', time: new Date(T0 - 100) });
    await f.feed.poll();
    recorded.push({ id: 'aud_2', targetType: 'plan', targetId: 'gold', time: new Date(T0 + 100) });
    recorded.push({ id: 'aud_3', targetType: 'consumer', targetId: 'con_a', time: new Date(T0 + 150) });
    recorded.push({ id: 'aud_4', targetType: 'route', targetId: 'search', time: new Date(T0 + 160) });
    now += 250;
    await f.feed.poll();
    now += 250;
    await f.feed.poll();
    // Most were heard already through a message: the cache checks its entries again rather than dropping them.
    expect(f.told).toEqual([
      { kind: 'key', keyId: 'key_a', recheck: true },
      { kind: 'plan', rateLimitId: 'gold', recheck: true },
      { kind: 'consumer', consumerId: 'con_a', recheck: true },
      { kind: 'routes', recheck: true },
    ]);
    // Each read looks 5 s back, for entries committed a little after their time.
    expect(sinces).toEqual([T0 - 5_000, T0 - 4_750, T0 - 4_500]);
  });

  it('joins a read still running instead of starting another, and logs an outage once', async () => {
    let release!: () => void;
    let reads = 0;
    let failing = false;
    const f = feed(
      () => {
        reads++;
        if (failing) return Promise.reject(new Error('database down'));
        return new Promise((resolve) => (release = () => resolve([])));
      },
      () => T0,
    );
    const first = f.feed.poll();
    const second = f.feed.poll();
    expect(reads).toBe(1);
    release();
    await Promise.all([first, second]);
    failing = true;
    await f.feed.poll();
    await f.feed.poll();
    failing = false;
    const recovered = f.feed.poll();
    release();
    await recovered;
    expect(f.lines).toEqual([
      'cannot read recorded key changes; relying on change messages and the key cache lifetime',
      'reading recorded key changes again',
    ]);
  });
});
