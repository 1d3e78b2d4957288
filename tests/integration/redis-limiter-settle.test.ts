/**
 * Settling requests in Redis across replicas (RateLimiter.settle, docs/decisions/0191): three replicas
 * of the Redis limiter reserve and settle concurrently, a busy key's windows leased ahead; what a limit
 * and a balance end up charged is the sum of the settled units of the requests admitted, to the unit,
 * and a limit whose reservations bound the answers is never exceeded, through a Redis hang and the
 * death of a replica too, while a busy key's refunds go back to its leases (docs/decisions/0225).
 */
import type { Balance } from '../../src/plans/balance.js';
import type { Subject } from '../../src/plans/subject.js';
import { windowAt } from '../../src/plans/window.js';
import type { Decision } from '../../src/limits/rate-limiter.js';
import type { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { defineSettleScript } from '../../src/limits/settle-script.js';
import { limiterReplicasFor } from '../helpers/limiter-replicas.js';
import { keyOnly, plan } from '../helpers/plans.js';
import { waitFor } from '../helpers/poll.js';

const PREFIX = 'settle:';
const fleet = limiterReplicasFor(PREFIX);

/** A pseudo-random sequence of a seed, so a failure replays. */
function unitsDrawn(seed: number, most: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % (most + 1);
  };
}

interface Totals {
  /** Units settled of the admitted requests. */
  settled: number;
  admitted: number;
  refused: number;
  /** Requests whose consume call failed (timed out while Redis hung): not admitted. */
  failed: number;
}

/**
 * `perReplica` requests on each replica, `atOnce` at a time: each reserves `reserved` and, once
 * admitted, is settled at a drawn number of units; `afterTurn` sees the totals after each turn of
 * `atOnce` (where a test starts a fault). A settlement sent to Redis is awaited once all are sent, so
 * that a Redis hang holds no turn back. Answers the totals once every settlement is done.
 */
async function reserveAndSettle(
  replicas: readonly RedisRateLimiter[],
  subjects: readonly Subject[],
  reserved: number,
  draw: () => number,
  perReplica: number,
  atOnce: number,
  afterTurn: (totals: Totals) => void = () => {},
): Promise<Totals> {
  const totals: Totals = { settled: 0, admitted: 0, refused: 0, failed: 0 };
  const settling: Promise<void>[] = [];
  await Promise.all(
    replicas.map(async (limiter) => {
      for (let sent = 0; sent < perReplica; sent += atOnce) {
        await Promise.all(
          Array.from({ length: atOnce }, async () => {
            const admittedMs = Date.now();
            let decision: Decision;
            try {
              decision = await limiter.consume(subjects, reserved, admittedMs);
            } catch {
              // Its call timed out: not admitted (what Redis did with it is counted, never given back).
              return void totals.failed++;
            }
            if (!decision.allowed) return void totals.refused++;
            const units = draw();
            totals.admitted++;
            totals.settled += units;
            const settled = limiter.settle({ decision, subjects, reserved, admittedMs }, units, Date.now());
            if (settled instanceof Promise) settling.push(settled);
          }),
        );
        afterTurn(totals);
      }
    }),
  );
  await Promise.all(settling);
  return totals;
}

const dayCount = (keyId: string) => `${PREFIX}{${keyId}}:day:${windowAt('day', Date.now()).start}`;

it('charges a busy key’s leased window exactly what its requests settled at, across three replicas', async () => {
  const replicas = await Promise.all([fleet.replica(), fleet.replica(), fleet.replica()]);
  const subjects = keyOnly('key_busy', plan({ limit: 100_000_000, period: 'day' }));
  const { settled, admitted } = await reserveAndSettle(replicas, subjects, 100, unitsDrawn(7, 250), 300, 10);
  expect(admitted).toBe(900);
  // Leased units nobody used go back once the key is quiet: the count is then what was settled, and
  // its lease book holds nothing leased out (a replica reports a lease it used up in a later call).
  const count = async () => ({
    count: await fleet.admin.get(dayCount('key_busy')),
    leased: await fleet.admin.hget(`${dayCount('key_busy')}:lease`, 'p'),
  });
  const quiet = await waitFor(count, (seen) => seen.count === String(settled) && seen.leased === '0', {
    timeoutMs: 5_000,
    everyMs: 20,
  });
  expect(quiet.value).toEqual({ count: String(settled), leased: '0' });
});

const BURST = 100_000_000;
const bucketKey = (keyId: string) => `${PREFIX}{${keyId}}:bucket:day`;

it.each([
  {
    algorithm: 'a fixed window',
    limit: plan({ limit: BURST, period: 'day' }),
    // Its count: what was settled.
    charged: async (keyId: string) => Number(await fleet.admin.get(dayCount(keyId))),
  },
  {
    algorithm: 'a token bucket',
    // One unit a day: within the test only the burst counts.
    limit: plan({ limit: 1, period: 'day', algorithm: 'tokenBucket', burst: BURST }),
    // What it lacks of its burst, once nothing is leased out: what was settled.
    charged: async (keyId: string) => {
      const [units, out] = await fleet.admin.hmget(bucketKey(keyId), 'u', 'o');
      return Number(out) === 0 ? BURST - Number(units) : NaN;
    },
  },
])(
  'gives refunds back to $algorithm’s running leases, with no settle call; it ends charged what was settled',
  async ({ limit, charged }) => {
    const limiter = await fleet.replica();
    const keyId = `key_refunds_${limit.limits[0]!.algorithm}`;
    const subjects = keyOnly(keyId, limit);
    const draw = unitsDrawn(11, 99);
    let settled = 0;
    /** Settlements that went to Redis (a promise for their call): no running lease could take them. */
    let called = 0;
    for (let i = 0; i < 600; i++) {
      const admittedMs = Date.now();
      const decision = await limiter.consume(subjects, 100, admittedMs);
      expect(decision.allowed).toBe(true);
      const units = draw();
      settled += units;
      const settling = limiter.settle({ decision, subjects, reserved: 100, admittedMs }, units, Date.now());
      if (settling instanceof Promise) {
        called++;
        await settling;
      }
    }
    // Most refunds made no call, a lease of the key taking them: each call leaves its mark.
    expect(called).toBeLessThan(100);
    expect(await fleet.admin.keys(`${PREFIX}{${keyId}}:settled:*`)).toHaveLength(called);
    // Once the key is quiet its leases go back, refunds with them.
    const quiet = await waitFor(
      () => charged(keyId),
      (units) => units === settled,
      { timeoutMs: 5_000, everyMs: 20 },
    );
    expect(quiet.value).toBe(settled);
  },
);

it('never exceeds a limit whose reservations bound the answers, refunds admitting more', async () => {
  const replicas = await Promise.all([fleet.replica(), fleet.replica(), fleet.replica()]);
  const subjects = keyOnly('key_bounded', plan({ limit: 2_000, period: 'day' }));
  const { settled, admitted, refused } = await reserveAndSettle(
    replicas,
    subjects,
    10,
    unitsDrawn(11, 10),
    200,
    8,
  );
  expect(refused).toBeGreaterThan(0);
  // 2,000 units of reservations of 10 admit 200; refunds made room for more.
  expect(admitted).toBeGreaterThan(200);
  expect(settled).toBeLessThanOrEqual(2_000);
  const count = await waitFor(
    () => fleet.admin.get(dayCount('key_bounded')),
    (value) => value === String(settled),
    { timeoutMs: 5_000, everyMs: 20 },
  );
  expect(count.value).toBe(String(settled));
});

it('never admits past a limit through a Redis hang while refunds go back to leases, nor counts less than was settled', async () => {
  // Commands time out after 200 ms: a call that did is dropped, its units counted as used (never fewer).
  const replicas = await Promise.all([fleet.replica({}, 200), fleet.replica({}, 200)]);
  const subjects = keyOnly('key_hang_refunds', plan({ limit: 5_000, period: 'day' }));
  let hang: Promise<void> | undefined;
  /** Redis paused once the key is busy, until a request felt it (its call timed out). */
  const hangRedis = async (totals: Totals) => {
    fleet.server.pause();
    try {
      await waitFor(
        () => Promise.resolve(totals.failed),
        (failed) => failed > 0,
        { timeoutMs: 10_000, everyMs: 20 },
      );
    } finally {
      fleet.server.resume();
    }
  };
  const totals = await reserveAndSettle(replicas, subjects, 10, unitsDrawn(17, 10), 1_500, 10, (seen) => {
    if (hang === undefined && seen.admitted >= 200) hang = hangRedis(seen);
  });
  await hang;
  expect(totals.failed).toBeGreaterThan(0);
  expect(totals.refused).toBeGreaterThan(0);
  // 5,000 units of reservations of 10 admit 500; refunds made room for more, never past the limit.
  expect(totals.admitted).toBeGreaterThan(500);
  expect(totals.settled).toBeLessThanOrEqual(5_000);
  // The count holds every unit settled, plus what leases still hold and what timed-out calls kept.
  const count = Number(await fleet.admin.get(dayCount('key_hang_refunds')));
  expect(count).toBeGreaterThanOrEqual(totals.settled);
  expect(count).toBeLessThanOrEqual(5_000);
});

it('never admits past a limit when a replica dies holding leases its refunds went back to, nor counts less than was settled', async () => {
  const [doomed, ...survivors] = await Promise.all([fleet.replica(), fleet.replica(), fleet.replica()]);
  const subjects = keyOnly('key_dead_refunds', plan({ limit: 5_000, period: 'day' }));
  const draw = unitsDrawn(19, 10);
  // The key busy on every replica, leased, its refunds going back to the leases; then one dies with them.
  const before = await reserveAndSettle([doomed!, ...survivors], subjects, 10, draw, 100, 10);
  await fleet.kill(doomed!);
  const after = await reserveAndSettle(survivors, subjects, 10, draw, 800, 10);
  expect(after.refused).toBeGreaterThan(0);
  const settled = before.settled + after.settled;
  expect(settled).toBeLessThanOrEqual(5_000);
  // The dead replica's leases, refunds in them, stay counted: never fewer units than were settled.
  const count = Number(await fleet.admin.get(dayCount('key_dead_refunds')));
  expect(count).toBeGreaterThanOrEqual(settled);
  expect(count).toBeLessThanOrEqual(5_000);
});

it('spends from a balance exactly what its requests settled at, never below 0 when reservations bound them', async () => {
  const replicas = await Promise.all([fleet.replica(), fleet.replica(), fleet.replica()]);
  const balance: Balance = { epoch: 1, window: 0, granted: 1_000, floor: 0, refill: null, lowAt: 0 };
  const subjects: Subject[] = [{ scope: 'key', id: 'key_credits', plan: plan(), balance }];
  const { settled, refused } = await reserveAndSettle(replicas, subjects, 10, unitsDrawn(13, 10), 120, 6);
  expect(refused).toBeGreaterThan(0);
  const [state] = await replicas[0]!.peekBalances(subjects, Date.now());
  expect(settled).toBeLessThanOrEqual(1_000);
  expect(state!.remaining).toBe(1_000 - settled);
});

it('charges an overshoot past the limit, and refuses until the window is back within it', async () => {
  const [limiter] = await Promise.all([fleet.replica()]);
  const subjects = keyOnly('key_over', plan({ limit: 100, period: 'day' }));
  const admittedMs = Date.now();
  const decision = await limiter!.consume(subjects, 90, admittedMs);
  expect(decision.allowed).toBe(true);
  await limiter!.settle({ decision, subjects, reserved: 90, admittedMs }, 130, Date.now());
  expect(await fleet.admin.get(dayCount('key_over'))).toBe('130');
  expect((await limiter!.consume(subjects, 1, Date.now())).allowed).toBe(false);
  const [state] = await limiter!.peek(subjects, Date.now());
  expect(state!.remaining).toBe(0);
});

it('settles the requests of one turn that charge the same counts in one script call, charging their sum', async () => {
  const limiter = await fleet.replica();
  // Limits too small to lease: every call below is a settlement of this test's.
  const keys = ['key_turn_a', 'key_turn_b'];
  const admittedMs = Date.now();
  const reservations = [];
  for (const keyId of keys) {
    const subjects = keyOnly(keyId, plan({ limit: 1_000, period: 'day' }));
    for (let i = 0; i < 10; i++) {
      const decision = await limiter.consume(subjects, 10, admittedMs);
      expect(decision.allowed).toBe(true);
      reservations.push({ keyId, reservation: { decision, subjects, reserved: 10, admittedMs } });
    }
  }
  // A script's first call on a connection goes as EVAL (ioredis' defined commands), later ones as EVALSHA.
  const scriptCalls = async () => {
    const stats = await fleet.admin.info('commandstats');
    const calls = (command: string) =>
      Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    return calls('eval') + calls('evalsha');
  };
  const before = await scriptCalls();
  const draw = unitsDrawn(17, 20);
  const settled = new Map(keys.map((keyId) => [keyId, 0]));
  await Promise.all(
    reservations.map(({ keyId, reservation }) => {
      const units = draw();
      settled.set(keyId, settled.get(keyId)! + units);
      return limiter.settle(reservation, units, Date.now());
    }),
  );
  expect((await scriptCalls()) - before).toBe(keys.length);
  for (const keyId of keys) expect(await fleet.admin.get(dayCount(keyId))).toBe(String(settled.get(keyId)));
});

it('settles through a Redis hang: a call that timed out is sent again until Redis takes it, and charges once', async () => {
  const limiter = await fleet.replica({}, 200);
  const subjects = keyOnly('key_hang', plan({ limit: 1_000, period: 'day' }));
  const admittedMs = Date.now();
  const decision = await limiter.consume(subjects, 10, admittedMs);
  expect(decision.allowed).toBe(true);
  const settleFailures = async () =>
    (await fleet.metrics.redisErrors.get()).values.find((v) => v.labels.operation === 'settle')?.value ?? 0;
  const failedBefore = await settleFailures();
  fleet.server.pause();
  let settled: void | Promise<void>;
  try {
    settled = limiter.settle({ decision, subjects, reserved: 10, admittedMs }, 3, Date.now());
    // Two sendings timed out while Redis hung; the next is sent once it answers again.
    await waitFor(settleFailures, (failed) => failed >= failedBefore + 2, { timeoutMs: 10_000, everyMs: 20 });
  } finally {
    fleet.server.resume();
  }
  await settled;
  expect(await fleet.admin.get(dayCount('key_hang'))).toBe('3');
});

it('charges a settle call once however many times it is sent: its mark says it was', async () => {
  const settle = defineSettleScript(fleet.admin);
  const count = dayCount('key_resent');
  await fleet.admin.set(count, '10');
  const keys = [count, `${PREFIX}{key_resent}:settled:test:1`];
  const call = {
    delta: -7,
    now: Date.now(),
    markMs: 60_000,
    limits: [{ algorithm: 'fixed' as const }],
    balances: [],
  };
  await settle(keys, call);
  await settle(keys, call);
  expect(await fleet.admin.get(count)).toBe('3');
  // Another call (another mark) charges again.
  await settle([count, `${PREFIX}{key_resent}:settled:test:2`], { ...call, delta: 2 });
  expect(await fleet.admin.get(count)).toBe('5');
});
