/**
 * What the in-process limiter tells the outbox as it charges (docs/guides/webhooks.md, docs/decisions/0052):
 * `quota.threshold` at the request that reaches 80 % and 100 % of a limit of an hour or longer, once
 * per limit, window and threshold; `credits.low` and `credits.exhausted` once per balance period.
 */
import fc from 'fast-check';
import { LimitNotices } from '../../src/limits/limit-notices.js';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import { thresholdCount } from '../../src/limits/quota-thresholds.js';
import { slotMs } from '../../src/limits/sliding-window.js';
import { balanceSet, balanceToppedUp, type Balance } from '../../src/plans/balance.js';
import type { Plan } from '../../src/plans/plan.js';
import type { Subject } from '../../src/plans/subject.js';
import type { NewEvent } from '../../src/store/outbox.js';
import { keyOnly, plan } from '../helpers/plans.js';

/** Tuesday 2026-03-03 10:00:00.000 UTC. */
const T0 = Date.UTC(2026, 2, 3, 10, 0, 0, 0);
const HOUR = 3_600_000;

const limiters: MemoryRateLimiter[] = [];
function watched(): { limiter: MemoryRateLimiter; notices: LimitNotices } {
  const notices = new LimitNotices();
  const limiter = new MemoryRateLimiter({ notices });
  limiters.push(limiter);
  return { limiter, notices };
}
afterAll(() => Promise.all(limiters.map((l) => l.close())));

/** An event as a receiver reads it: its type, parsed data and once-key. */
const read = (events: readonly NewEvent[]) =>
  events.map((e) => ({ type: e.type, data: JSON.parse(e.data) as Record<string, unknown>, once: e.once }));

describe('quota.threshold from the in-process limiter', () => {
  it('tells 80 % and 100 % at the requests that reach them, once each, with the limit, its window and no more', () => {
    const { limiter, notices } = watched();
    const p = plan({ limit: 10, period: 'hour' });
    const told: number[][] = [];
    for (let i = 1; i <= 14; i++) {
      const decision = limiter.consume(keyOnly('key_a', p), 1, T0 + i * 1_000);
      expect(decision.allowed).toBe(i <= 10);
      told.push(read(notices.take(T0)).map((e) => e.data.threshold as number));
    }
    // The 8th request leaves 2 of 10 (20 %): it tells 80; the 10th tells 100; the refused ones nothing.
    expect(told).toEqual([[], [], [], [], [], [], [], [80], [], [100], [], [], [], []]);
  });

  it('names the subject, the limit and the window, with a once-key until the window has ended', () => {
    const { limiter, notices } = watched();
    const p = plan({ limit: 5, period: 'day', name: 'daily' });
    const consumer: Subject = { scope: 'consumer', id: 'con_1', plan: p };
    for (let i = 0; i < 4; i++)
      limiter.consume([{ scope: 'key', id: 'key_b', plan: plan() }, consumer], 1, T0);
    const [event] = notices.take(T0);
    expect(event!.type).toBe('quota.threshold');
    expect(event!.at).toEqual(new Date(T0));
    expect(JSON.parse(event!.data)).toEqual({
      consumerId: 'con_1',
      scope: 'consumer',
      limit: { name: 'daily', period: 'day', limit: 5, algorithm: 'fixed' },
      window: { start: '2026-03-03T00:00:00Z', end: '2026-03-04T00:00:00Z' },
      threshold: 80,
    });
    expect(event!.once).toEqual({
      key: `quota.threshold:consumer:con_1:daily:5:${Date.UTC(2026, 2, 3)}:80`,
      until: new Date(Date.UTC(2026, 2, 4) + 60_000),
    });
  });

  it('tells a request whose cost jumps both thresholds both, 80 first', () => {
    const { limiter, notices } = watched();
    const p = plan({ limit: 100, period: 'month' });
    expect(limiter.consume(keyOnly('key_c', p), 79, T0).allowed).toBe(true);
    expect(notices.take(T0)).toEqual([]);
    expect(limiter.consume(keyOnly('key_c', p), 21, T0).allowed).toBe(true);
    expect(read(notices.take(T0)).map((e) => e.data.threshold)).toEqual([80, 100]);
  });

  it('tells nothing for limits shorter than an hour, and each window of a longer one afresh', () => {
    const { limiter, notices } = watched();
    const p = plan({ limit: 2, period: 'minute', name: 'burst' }, { limit: 4, period: 'hour' });
    const key = keyOnly('key_d', p);
    for (const at of [0, 1, 61_000, 61_001]) limiter.consume(key, 1, T0 + at);
    // The minute filled twice: nothing. The hour reached 80 % (4 × 0.8 = 3.2: the 4th unit) and 100 % at once.
    expect(read(notices.take(T0)).map((e) => [e.data.limit, e.data.threshold])).toEqual([
      [{ name: 'hour', period: 'hour', limit: 4, algorithm: 'fixed' }, 80],
      [{ name: 'hour', period: 'hour', limit: 4, algorithm: 'fixed' }, 100],
    ]);
    for (const at of [0, 1, 61_000, 61_001]) limiter.consume(key, 1, T0 + HOUR + at);
    expect(
      read(notices.take(T0)).map((e) => [(e.data.window as { start: string }).start, e.data.threshold]),
    ).toEqual([
      ['2026-03-03T11:00:00Z', 80],
      ['2026-03-03T11:00:00Z', 100],
    ]);
  });

  it('tells a sliding limit once per UTC window of its period, though its count carries over', () => {
    const { limiter, notices } = watched();
    const p = plan({ limit: 10, period: 'hour', algorithm: 'sliding' });
    const key = keyOnly('key_e', p);
    for (let i = 0; i < 8; i++) limiter.consume(key, 1, T0 + 50 * 60_000);
    expect(
      read(notices.take(T0)).map((e) => [(e.data.window as { start: string }).start, e.data.threshold]),
    ).toEqual([['2026-03-03T10:00:00Z', 80]]);
    // A slot into the next hour the 8 still count: the next request is at 9 of 10, above 80 % again.
    expect(limiter.consume(key, 1, T0 + HOUR + slotMs('hour')).allowed).toBe(true);
    expect(
      read(notices.take(T0)).map((e) => [(e.data.window as { start: string }).start, e.data.threshold]),
    ).toEqual([['2026-03-03T11:00:00Z', 80]]);
  });

  it('starts afresh for a plan changed to another limit, and never tells one threshold twice', () => {
    const { limiter, notices } = watched();
    const small = plan({ limit: 10, period: 'hour' });
    for (let i = 0; i < 8; i++) limiter.consume(keyOnly('key_f', small), 1, T0);
    // The same limit under another selection (a new plan object, the same terms): nothing new.
    const same: Plan = plan({ limit: 10, period: 'hour' });
    limiter.consume(keyOnly('key_f', same), 1, T0);
    const larger = plan({ limit: 20, period: 'hour' });
    // 9 of 20 spent: the 16th unit reaches 80 % of the new limit.
    for (let i = 0; i < 7; i++) limiter.consume(keyOnly('key_f', larger), 1, T0);
    expect(
      read(notices.take(T0)).map((e) => [(e.data.limit as { limit: number }).limit, e.data.threshold]),
    ).toEqual([
      [10, 80],
      [20, 80],
    ]);
  });

  it('finds the 80 % count as ⌈0.8 × limit⌉ for every limit up to 2^53 − 1', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: BigInt(Number.MAX_SAFE_INTEGER) }), (limit) => {
        const exact = (limit * 4n + 4n) / 5n; // ⌈4L/5⌉
        expect(BigInt(thresholdCount(Number(limit), 80))).toBe(exact);
        expect(thresholdCount(Number(limit), 100)).toBe(Number(limit));
      }),
    );
  });
});

describe('credits.low and credits.exhausted from the in-process limiter', () => {
  const refilled = (amount: number, lowAt: number | null = null): Balance =>
    balanceSet(0, amount, { amount, interval: 'day', dayOfMonth: 1 }, lowAt, T0);
  const holder = (balance: Balance): Subject[] => [{ scope: 'key', id: 'key_g', plan: plan(), balance }];

  it('tells low below a tenth of the refill, exhausted at 0, each once, and both again after a top-up', () => {
    const { limiter, notices } = watched();
    let balance = refilled(50);
    const spend = (cost: number) => limiter.consume(holder(balance), cost, T0).allowed;
    expect(spend(40)).toBe(true); // 10 left: not below ⌈50 / 10⌉ = 5
    expect(spend(6)).toBe(true); // 4 left
    expect(spend(1)).toBe(true);
    expect(read(notices.take(T0)).map((e) => [e.type, e.data.remaining])).toEqual([['credits.low', 4]]);
    expect(spend(3)).toBe(true); // 0 left
    expect(spend(1)).toBe(false);
    const [exhausted] = read(notices.take(T0));
    expect(exhausted).toEqual({
      type: 'credits.exhausted',
      data: {
        consumerApiKeyId: 'key_g',
        scope: 'key',
        remaining: 0,
        refill: { amount: 50, interval: 'day', dayOfMonth: 1 },
        resetTime: '2026-03-04T00:00:00Z',
      },
      once: {
        key: `credits.exhausted:key:key_g:1:${Date.UTC(2026, 2, 3)}:50`,
        until: new Date(Date.UTC(2026, 2, 4) + 60_000),
      },
    });
    expect(notices.take(T0)).toEqual([]);
    // Topped up by 10: a new period; spending it down tells both again.
    balance = balanceToppedUp(balance, 1, 10, T0);
    expect(spend(10)).toBe(true);
    expect(read(notices.take(T0)).map((e) => [e.type, e.data.remaining])).toEqual([
      ['credits.low', 0],
      ['credits.exhausted', 0],
    ]);
  });

  it('tells exhausted when a balance refuses a request it cannot pay, though not at 0, and low below its own lowAt', () => {
    const { limiter, notices } = watched();
    const balance = balanceSet(0, 30, null, 25, T0);
    expect(limiter.consume(holder(balance), 6, T0).allowed).toBe(true); // 24 left, below 25
    expect(read(notices.take(T0))).toEqual([
      expect.objectContaining({
        type: 'credits.low',
        data: {
          consumerApiKeyId: 'key_g',
          scope: 'key',
          remaining: 24,
          lowAt: 25,
          refill: null,
          resetTime: null,
        },
      }),
    ]);
    expect(limiter.consume(holder(balance), 20, T0).allowed).toBe(true);
    expect(limiter.consume(holder(balance), 5, T0).allowed).toBe(false); // 4 left
    expect(read(notices.take(T0)).map((e) => [e.type, e.data.remaining])).toEqual([['credits.exhausted', 4]]);
  });

  it('tells nothing of a balance without refill or lowAt until it can pay no more', () => {
    const { limiter, notices } = watched();
    const balance = balanceSet(0, 3, null, null, T0);
    for (let i = 0; i < 2; i++) limiter.consume(holder(balance), 1, T0);
    expect(notices.take(T0)).toEqual([]);
    limiter.consume(holder(balance), 1, T0);
    expect(read(notices.take(T0)).map((e) => e.type)).toEqual(['credits.exhausted']);
  });
});
