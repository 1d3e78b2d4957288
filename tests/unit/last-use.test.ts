import { LastUseTracker } from '../../src/keys/last-use.js';
import { createLogger } from '../../src/ops/logger.js';

describe('LastUseTracker', () => {
  it('writes the latest use of each key in one batch, and nothing when nothing was noted', async () => {
    const writes: Map<string, number>[] = [];
    const tracker = new LastUseTracker(
      async (times) => void writes.push(new Map(times)),
      createLogger('silent'),
    );
    await tracker.flush();
    tracker.used('key_a', 1_000);
    tracker.used('key_b', 1_500);
    tracker.used('key_a', 2_000);
    await tracker.flush();
    expect(writes).toEqual([
      new Map([
        ['key_a', 2_000],
        ['key_b', 1_500],
      ]),
    ]);
  });

  it('writes at stop the uses noted after a write still going began', async () => {
    const writes: Map<string, number>[] = [];
    let open!: () => void;
    const slow = new Promise<void>((resolve) => (open = resolve));
    const tracker = new LastUseTracker(async (times) => {
      await slow;
      writes.push(new Map(times));
    }, createLogger('silent'));
    tracker.used('key_a', 1_000);
    const going = tracker.flush();
    tracker.used('key_b', 2_000);
    const stopping = tracker.stop();
    open();
    await Promise.all([going, stopping]);
    expect(writes).toEqual([new Map([['key_a', 1_000]]), new Map([['key_b', 2_000]])]);
  });

  it('keeps the times of a failed write for the next one, unless a later use was noted meanwhile', async () => {
    const writes: Map<string, number>[] = [];
    let fail = true;
    const lines: string[] = [];
    const tracker = new LastUseTracker(
      async (times) => {
        if (fail) throw new Error('database down');
        writes.push(new Map(times));
      },
      createLogger('warn', { write: (line: string) => void lines.push(line) }),
    );
    tracker.used('key_a', 1_000);
    tracker.used('key_b', 1_000);
    const failing = tracker.flush();
    tracker.used('key_b', 3_000);
    await failing;
    expect(lines.join('')).toMatch(/database down/);
    fail = false;
    await tracker.stop();
    expect(writes).toEqual([
      new Map([
        ['key_b', 3_000],
        ['key_a', 1_000],
      ]),
    ]);
  });
});
