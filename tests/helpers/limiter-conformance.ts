import type { Balance } from '../../src/plans/balance.js';
import type { Subject } from '../../src/plans/subject.js';
import type { Decision, RateLimiter, Reservation } from '../../src/limits/rate-limiter.js';
import { countsVisitors, visitorOf } from '../../src/limits/visitor.js';
import { windowAt } from '../../src/plans/window.js';
import { plan } from './plans.js';

/**
 * The limiter conformance table (tests/integration/limiter-conformance.test.ts): cases that every
 * RateLimiter decides alike, in-process and in Redis. Each case names its subjects' terms and a run of
 * steps at instants after BASE, each with the decision expected, written by `summaryOf`.
 */

/** A UTC day's start, ahead of the wall clock (counts in Redis expire by it): every window lines up with it. */
export const BASE = windowAt('day', Date.now()).end;

/** A subject's terms in a case: its plan's limits and its balance's units (absent: none). */
interface Terms {
  readonly limits: Parameters<typeof plan>;
  readonly credits?: number;
}

/** Requests a case makes: by whom (a key of the case, its consumer's terms shared) and what. */
export interface Step {
  /** Ms after BASE. */
  readonly at: number;
  /** The case's key that sends it (default `a`). */
  readonly key?: string;
  readonly cost?: number;
  /** Its client address, for limits per visitor. */
  readonly client?: string;
  /** Gives back the places of the decision of step `release` (0-based; none: nothing) instead of asking. */
  readonly release?: number;
  /**
   * Settles the request of step `of` (0-based, admitted, its cost reserved) at `units` instead of
   * asking: its cost became known after its response (RateLimiter.settle).
   */
  readonly settle?: { readonly of: number; readonly units: number };
  /** The key's plan from this step on (a switch of plan); absent: as before. */
  readonly limits?: Terms['limits'];
  /** Redis loses every key it holds before this step (nothing in process). */
  readonly lose?: true;
  /** `summaryOf` the decision expected; absent for a release, a settlement or a loss. */
  readonly expect?: string;
}

export interface ConformanceCase {
  readonly name: string;
  /** The case's keys, by name. */
  readonly keys: Readonly<Record<string, Terms>>;
  /** Their consumer's terms; absent: the keys have none. */
  readonly consumer?: Terms;
  readonly steps: readonly Step[];
}

/** The keys of a case with one key, `a`, of these limits. */
export const onlyKey = (...limits: Parameters<typeof plan>): ConformanceCase['keys'] => ({ a: { limits } });

const balanceOf = (granted: number): Balance => ({
  epoch: 1,
  window: 0,
  granted,
  floor: 0,
  refill: null,
  lowAt: 0,
});

/** The subjects of a request by key `key` of `c`, their ids made unique by `run`. */
export function subjectsOf(
  c: ConformanceCase,
  key: string,
  run: string,
  limits: Terms['limits'] = c.keys[key]!.limits,
): Subject[] {
  const subjectOf = (scope: 'key' | 'consumer', id: string, terms: Terms): Subject => ({
    scope,
    id: `${run}-${id}`,
    plan: plan(...terms.limits),
    ...(terms.credits !== undefined && { balance: balanceOf(terms.credits) }),
  });
  const subjects = [subjectOf('key', key, { ...c.keys[key]!, limits })];
  if (c.consumer !== undefined) subjects.push(subjectOf('consumer', 'consumer', c.consumer));
  return subjects;
}

/**
 * A decision in a line: `admitted` or `refused`, the limit it reports (`scope:name remaining +resetMs`
 * after BASE) and the balance (`credits scope remaining`).
 */
export function summaryOf(d: Decision): string {
  let line = d.allowed ? 'admitted' : 'refused';
  if (d.limit !== undefined)
    line += ` ${d.limit.scope}:${d.limit.rule.name} ${d.limit.remaining} +${d.limit.resetMs - BASE}`;
  if (d.balance !== undefined) line += ` credits ${d.balance.scope} ${d.balance.remaining}`;
  return line;
}

/**
 * What a limiter decided at each step of `c` (undefined for a release or a loss), moving `clock` to each
 * step's instant; a visitor is passed, as the admission does, only to subjects with limits per visitor.
 */
export async function decide(
  limiter: Pick<RateLimiter, 'consume' | 'settle'>,
  c: ConformanceCase,
  run: string,
  clock: { now: number },
  store: LimiterStore,
): Promise<(Decision | undefined)[]> {
  const decisions: (Decision | undefined)[] = [];
  const reservations: (Reservation | undefined)[] = [];
  let held = 0;
  const switched = new Map<string, Terms['limits']>();
  for (const step of c.steps) {
    if (step.limits !== undefined) switched.set(step.key ?? 'a', step.limits);
    clock.now = BASE + step.at;
    if (step.lose) await store.lose();
    const releasing = step.release === undefined ? undefined : decisions[step.release]?.release;
    if (releasing !== undefined) {
      releasing();
      await store.released(run, --held);
    }
    if (step.settle !== undefined) {
      await limiter.settle(reservations[step.settle.of]!, step.settle.units, clock.now);
    }
    if (step.lose || step.release !== undefined || step.settle !== undefined) {
      decisions.push(undefined);
      reservations.push(undefined);
      continue;
    }
    const subjects = subjectsOf(c, step.key ?? 'a', run, switched.get(step.key ?? 'a'));
    const visitor = countsVisitors(subjects) ? visitorOf(step.client, undefined) : undefined;
    const d = await limiter.consume(subjects, step.cost ?? 1, clock.now, visitor);
    if (d.release !== undefined) held++;
    decisions.push(d);
    reservations.push({
      decision: d,
      subjects,
      ...(visitor !== undefined && { visitor }),
      reserved: step.cost ?? 1,
      admittedMs: clock.now,
    });
  }
  return decisions;
}

/** Where a limiter keeps its counts, as a case's steps reach it. */
export interface LimiterStore {
  /** Loses every count it holds (Redis; nothing in process). */
  lose(): Promise<unknown>;
  /** Resolves once the places of run `run` are down to `held` (a release reaches Redis after its call). */
  released(run: string, held: number): Promise<unknown>;
}

/** What `c` expects at each step ('' for a release or a loss). */
export const expectedOf = (c: ConformanceCase): string[] => c.steps.map((s) => s.expect ?? '');

const SLOT_MS = 3_000; // a sliding minute's slot (sliding-window.ts: SLOTS = 20)

export const CASES: readonly ConformanceCase[] = [
  {
    name: 'a fixed window: exactly its limit, costs counted, a new window at its boundary',
    keys: onlyKey({ limit: 3, period: 'second' }),
    steps: [
      { at: 0, expect: 'admitted key:second 2 +1000' },
      { at: 10, cost: 2, expect: 'admitted key:second 0 +1000' },
      { at: 999, expect: 'refused key:second 0 +1000' },
      { at: 1_000, cost: 3, expect: 'admitted key:second 0 +2000' },
      { at: 1_999, cost: 2, expect: 'refused key:second 0 +2000' },
    ],
  },
  {
    name: 'a sliding window: one period and one slot back, freed as its slots leave, costs counted',
    keys: onlyKey({ limit: 3, period: 'minute', algorithm: 'sliding' }),
    steps: [
      { at: 0, expect: 'admitted key:minute 2 +63000' },
      { at: 10 * SLOT_MS, expect: 'admitted key:minute 1 +63000' },
      { at: 60_000, cost: 2, expect: 'refused key:minute 1 +63000' },
      { at: 60_000, expect: 'admitted key:minute 0 +63000' },
      // Slot 0 has left: one place back, not two.
      { at: 21 * SLOT_MS, cost: 2, expect: 'refused key:minute 1 +93000' },
      { at: 21 * SLOT_MS, expect: 'admitted key:minute 0 +93000' },
    ],
  },
  {
    name: 'a token bucket: its burst, then its refill, a refusal naming when it holds the cost',
    keys: onlyKey({ limit: 2, period: 'second', algorithm: 'tokenBucket', burst: 4 }),
    steps: [
      // It holds a unit now: its reset is now.
      { at: 0, cost: 3, expect: 'admitted key:second 1 +0' },
      { at: 0, expect: 'admitted key:second 0 +1000' },
      { at: 499, expect: 'refused key:second 0 +1000' },
      { at: 500, expect: 'admitted key:second 0 +1000' },
      { at: 1_000, cost: 3, expect: 'refused key:second 1 +2000' },
      { at: 3_000, cost: 4, expect: 'admitted key:second 0 +4000' },
    ],
  },
  {
    name: 'a concurrency limit: one place per request whatever its cost, back when released',
    keys: onlyKey({ limit: 2, algorithm: 'concurrency' }, { limit: 100, period: 'minute' }),
    steps: [
      { at: 0, cost: 10, expect: 'admitted key:concurrency 1 +1000' },
      { at: 5, cost: 10, expect: 'admitted key:concurrency 0 +1005' },
      { at: 10, expect: 'refused key:concurrency 0 +1010' },
      { at: 20, release: 0 },
      { at: 30, expect: 'admitted key:concurrency 0 +1030' },
      { at: 40, cost: 79, expect: 'refused key:concurrency 0 +1040' },
    ],
  },
  {
    name: 'several limits: the tightest reported, ties to the window that ends last; refused by the latest',
    keys: onlyKey({ limit: 2, period: 'second', name: 'burst' }, { limit: 4, period: 'hour' }),
    steps: [
      { at: 0, expect: 'admitted key:burst 1 +1000' },
      { at: 1, expect: 'admitted key:burst 0 +1000' },
      { at: 2, expect: 'refused key:burst 0 +1000' },
      { at: 1_000, expect: 'admitted key:hour 1 +3600000' },
      { at: 1_001, expect: 'admitted key:hour 0 +3600000' },
      { at: 2_000, expect: 'refused key:hour 0 +3600000' },
    ],
  },
  {
    name: 'a key and its consumer: both charged or neither, the consumer shared by its keys',
    keys: {
      a: { limits: [{ limit: 6, period: 'minute' }] },
      b: { limits: [{ limit: 100, period: 'minute' }] },
    },
    consumer: { limits: [{ limit: 10, period: 'minute' }] },
    steps: [
      { at: 0, cost: 5, expect: 'admitted key:minute 1 +60000' },
      { at: 1, cost: 2, expect: 'refused key:minute 1 +60000' },
      { at: 2, key: 'b', cost: 5, expect: 'admitted consumer:minute 0 +60000' },
      { at: 3, key: 'b', expect: 'refused consumer:minute 0 +60000' },
      { at: 60_000, key: 'b', cost: 10, expect: 'admitted consumer:minute 0 +120000' },
    ],
  },
  {
    name: 'balances: charged by cost, the key’s refusing before its consumer’s, a balance before a limit',
    keys: { a: { limits: [{ limit: 10, period: 'minute' }], credits: 9 } },
    consumer: { limits: [], credits: 7 },
    steps: [
      { at: 0, cost: 4, expect: 'admitted key:minute 6 +60000 credits consumer 3' },
      { at: 1, cost: 4, expect: 'refused credits consumer 3' },
      { at: 2, cost: 3, expect: 'admitted key:minute 3 +60000 credits consumer 0' },
      { at: 3, cost: 3, expect: 'refused credits key 2' },
      { at: 4, cost: 2, expect: 'refused credits consumer 0' },
    ],
  },
  {
    name: 'a limit per client address: each visitor counted apart',
    keys: onlyKey({ limit: 2, period: 'minute', per: 'clientAddress' }),
    steps: [
      { at: 0, client: '192.0.2.1', expect: 'admitted key:minute 1 +60000' },
      { at: 1, client: '192.0.2.1', expect: 'admitted key:minute 0 +60000' },
      { at: 2, client: '192.0.2.1', expect: 'refused key:minute 0 +60000' },
      { at: 3, client: '192.0.2.2', expect: 'admitted key:minute 1 +60000' },
    ],
  },
  {
    name: 'a busy key, leased ahead: every unit still reported in order',
    keys: onlyKey({ limit: 40_000, period: 'minute' }),
    steps: Array.from({ length: 30 }, (_, i) => ({
      at: i,
      cost: 100,
      expect: `admitted key:minute ${40_000 - 100 * (i + 1)} +60000`,
    })),
  },
  ...planSwitches(),
  ...settlements(),
  {
    name: 'Redis losing its keys: a window and a bucket put back, no more admitted',
    keys: onlyKey(
      { limit: 4, period: 'minute' },
      { limit: 1, period: 'second', algorithm: 'tokenBucket', burst: 5, name: 'bucket' },
    ),
    steps: [
      { at: 0, expect: 'admitted key:minute 3 +60000' },
      { at: 1, cost: 2, expect: 'admitted key:minute 1 +60000' },
      { at: 2, lose: true },
      { at: 3, expect: 'admitted key:minute 0 +60000' },
      { at: 4, expect: 'refused key:minute 0 +60000' },
      { at: 60_000, cost: 3, expect: 'admitted key:minute 1 +120000' },
    ],
  },
];

/**
 * Switching plans (docs/decisions/0175): 3 of 5 spent under a fixed hour, then another algorithm or a
 * match of the same period holds 2 more, and back; a limit of another period starts fresh.
 */
function planSwitches(): ConformanceCase[] {
  const fixed = { limit: 5, period: 'hour' } as const;
  // Each: its name, its limit, and the resets it reports for the 1st and 2nd request after the switch, then refusing.
  const others = [
    ['a sliding window', { limit: 5, period: 'hour', algorithm: 'sliding' }, 3_780_000, 3_780_000, 3_780_000],
    ['a token bucket', { limit: 5, period: 'hour', algorithm: 'tokenBucket' }, 10, 721_000, 721_000],
    [
      'a limit with a match',
      { limit: 5, period: 'hour', match: { pathPrefix: '/' } },
      3_600_000,
      3_600_000,
      3_600_000,
    ],
  ] as const;
  return others.map(([name, other, firstReset, secondReset, reset]) => ({
    name: `a switch of plan from a fixed window to ${name} and back: no fresh quota`,
    keys: onlyKey(fixed),
    steps: [
      { at: 0, cost: 3, expect: 'admitted key:hour 2 +3600000' },
      { at: 10, limits: [other], expect: `admitted key:hour 1 +${firstReset}` },
      { at: 20, expect: `admitted key:hour 0 +${secondReset}` },
      { at: 30, expect: `refused key:hour 0 +${reset}` },
      { at: 40, limits: [fixed], expect: 'refused key:hour 0 +3600000' },
      { at: 50, limits: [{ limit: 5, period: 'minute' }], cost: 5, expect: 'admitted key:minute 0 +60000' },
    ],
  }));
}

/**
 * Settling a request whose cost became known after its response (docs/decisions/0191): the difference
 * from its reservation charged or refunded to every limit and balance it was charged to, in the window,
 * slot and balance period of its admission, never refused; places unchanged.
 */
function settlements(): ConformanceCase[] {
  return [
    {
      name: 'settling in a fixed window: a refund admits more, an overshoot refuses, an ended window is left',
      keys: onlyKey({ limit: 10, period: 'second' }),
      steps: [
        { at: 0, cost: 8, expect: 'admitted key:second 2 +1000' },
        { at: 10, settle: { of: 0, units: 3 } },
        { at: 20, cost: 7, expect: 'admitted key:second 0 +1000' },
        { at: 30, settle: { of: 2, units: 9 } },
        { at: 40, expect: 'refused key:second 0 +1000' },
        { at: 1_000, cost: 6, expect: 'admitted key:second 4 +2000' },
        { at: 2_000, settle: { of: 5, units: 1 } },
        { at: 2_010, cost: 10, expect: 'admitted key:second 0 +3000' },
      ],
    },
    {
      name: 'settling in a sliding window: in the slot of the admission, while it counts',
      keys: onlyKey({ limit: 10, period: 'minute', algorithm: 'sliding' }),
      steps: [
        { at: 0, cost: 8, expect: 'admitted key:minute 2 +63000' },
        { at: 10 * SLOT_MS, settle: { of: 0, units: 2 } },
        { at: 10 * SLOT_MS, cost: 8, expect: 'admitted key:minute 0 +63000' },
        // Slot 0 (its 2) has left: the 8 of slot 10 count; one settled at 12 counts 4 more.
        { at: 21 * SLOT_MS, settle: { of: 2, units: 12 } },
        { at: 21 * SLOT_MS, expect: 'refused key:minute 0 +93000' },
      ],
    },
    {
      name: 'settling a token bucket: a refund fills it up to its burst at most, an overshoot drains it below empty',
      keys: onlyKey({ limit: 1, period: 'second', algorithm: 'tokenBucket', burst: 10 }),
      steps: [
        { at: 0, cost: 8, expect: 'admitted key:second 2 +0' },
        // Refilled to 3 by then: the refund of 8 fills it to 10, not 11.
        { at: 1_000, settle: { of: 0, units: 0 } },
        { at: 1_000, cost: 10, expect: 'admitted key:second 0 +2000' },
        { at: 1_000, settle: { of: 2, units: 12 } },
        { at: 3_000, expect: 'refused key:second 0 +4000' },
        { at: 4_000, expect: 'admitted key:second 0 +5000' },
      ],
    },
    {
      name: 'settling balances and a key’s and consumer’s limits together; a balance may end below 0',
      keys: { a: { limits: [{ limit: 100, period: 'minute' }], credits: 20 } },
      consumer: { limits: [{ limit: 50, period: 'minute' }], credits: 10 },
      steps: [
        { at: 0, cost: 8, expect: 'admitted consumer:minute 42 +60000 credits consumer 2' },
        { at: 1, settle: { of: 0, units: 1 } },
        { at: 2, cost: 9, expect: 'admitted consumer:minute 40 +60000 credits consumer 0' },
        { at: 3, settle: { of: 2, units: 12 } },
        { at: 4, expect: 'refused credits consumer 0' },
      ],
    },
    {
      name: 'settling a request holding a concurrency place: its place unchanged, its units settled',
      keys: onlyKey({ limit: 1, algorithm: 'concurrency' }, { limit: 10, period: 'minute' }),
      steps: [
        { at: 0, cost: 5, expect: 'admitted key:concurrency 0 +1000' },
        { at: 10, settle: { of: 0, units: 10 } },
        { at: 20, release: 0 },
        { at: 30, expect: 'refused key:minute 0 +60000' },
      ],
    },
  ];
}
