import { waitFor } from '../helpers/poll.js';

describe('waitFor', () => {
  it('resolves the first value that satisfies the condition', async () => {
    let n = 0;
    const { value } = await waitFor(
      () => Promise.resolve(++n),
      (v) => v === 3,
      { everyMs: 1 },
    );
    expect(value).toBe(3);
  });

  it('fails on timeout, naming what it waited for and the last value seen', async () => {
    const waiting = waitFor(
      () => Promise.resolve({ delivered: 2 }),
      (v) => v.delivered === 3,
      { timeoutMs: 20, everyMs: 1 },
    );
    await expect(waiting).rejects.toThrow(
      /for \(v\) ?=> ?v\.delivered === 3; last value seen: \{ delivered: 2 \}/,
    );
  });

  it('names the condition as the caller describes it', async () => {
    const waiting = waitFor(
      () => Promise.resolve(0),
      (v) => v > 0,
      { timeoutMs: 20, everyMs: 1, what: 'a delivery' },
    );
    await expect(waiting).rejects.toThrow(/ms for a delivery; last value seen: 0$/);
  });
});
