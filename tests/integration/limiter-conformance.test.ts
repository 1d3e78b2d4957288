/**
 * One table of cases (tests/helpers/limiter-conformance.ts) that both limiters decide alike: in process
 * (MemoryRateLimiter) and in Redis (RedisRateLimiter on a private redis-server), each step's decision the one the table expects; then random runs of requests driving both
 * with one test clock, every decision (limit, balance, every limit's state) the same in both.
 */
import fc from 'fast-check';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import type { Decision, RateLimiter } from '../../src/limits/rate-limiter.js';
import { limiterReplicasFor } from '../helpers/limiter-replicas.js';
import { waitFor } from '../helpers/poll.js';
import {
  BASE,
  CASES,
  decide,
  expectedOf,
  onlyKey,
  summaryOf,
  type ConformanceCase,
  type LimiterStore,
  type Step,
} from '../helpers/limiter-conformance.js';

const fleet = limiterReplicasFor('conformance:');
const clock = { now: BASE };
const tick = () => clock.now;
let runs = 0;
const runId = () => `r${runs++}-${Date.now()}`;

const inProcess: LimiterStore = { lose: () => Promise.resolve(), released: () => Promise.resolve() };
const inRedis: LimiterStore = {
  lose: () => fleet.admin.flushdb(),
  async released(run, held) {
    const { value } = await waitFor(
      () => placesOf(run),
      (places) => places === held,
    );
    expect(value).toBe(held);
  },
};

/** The places Redis holds in the counts of run `run`, every replica's. */
async function placesOf(run: string): Promise<number> {
  let places = 0;
  for (const key of await fleet.admin.keys(`conformance:*${run}-*`)) {
    if ((await fleet.admin.type(key)) !== 'hash') continue;
    for (const [field, n] of Object.entries(await fleet.admin.hgetall(key)))
      if (field.startsWith('p:')) places += Number(n);
  }
  return places;
}
const memories: MemoryRateLimiter[] = [];
afterAll(() => Promise.all(memories.map((l) => l.close())));

type Consume = Pick<RateLimiter, 'consume' | 'settle'>;

function memory(): Consume {
  const limiter = new MemoryRateLimiter({ clock: tick });
  memories.push(limiter);
  return limiter;
}

/**
 * A Redis replica (the fleet closes it). One: decisions spread over replicas are exact in sum but each
 * reports the units of its own lease, and a release reaches Redis on its replica's connection
 * (redis-limiter-*.test.ts prove those).
 */
const redis = (): Promise<Consume> => fleet.replica({ clock: tick });

describe.each([
  ['in process', async () => memory(), inProcess],
  ['in Redis', redis, inRedis],
] as const)('the limiter conformance table, %s', (_, make, store) => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const decisions = await decide(await make(), c, runId(), clock, store);
    expect(decisions.map((d) => (d === undefined ? '' : summaryOf(d)))).toEqual(expectedOf(c));
  });
});

/** A decision as both limiters must give it: everything but its release function. */
const comparable = (d: Decision | undefined) =>
  d && {
    allowed: d.allowed,
    limit: d.limit,
    balance: d.balance,
    states: d.states,
    releases: d.release !== undefined,
  };

/** Terms random runs draw from: every algorithm, alone and with a consumer's limit and credits. */
const TERMS: readonly Omit<ConformanceCase, 'steps'>[] = [
  {
    name: 'fixed',
    keys: onlyKey({ limit: 5, period: 'second' }, { limit: 12, period: 'minute' }),
  },
  { name: 'sliding', keys: { a: { limits: [{ limit: 6, period: 'second', algorithm: 'sliding' }] } } },
  {
    name: 'bucket',
    keys: onlyKey({ limit: 3, period: 'second', algorithm: 'tokenBucket', burst: 6 }),
  },
  {
    name: 'places',
    keys: onlyKey({ limit: 2, algorithm: 'concurrency' }, { limit: 9, period: 'second' }),
  },
  {
    name: 'consumer',
    keys: {
      a: { limits: [{ limit: 4, period: 'second', per: 'clientAddress' }], credits: 30 },
      b: { limits: [{ limit: 3, period: 'second', algorithm: 'sliding' }] },
    },
    consumer: { limits: [{ limit: 8, period: 'second' }], credits: 25 },
  },
];

const stepsOf = fc.array(
  fc.record({
    gap: fc.integer({ min: 0, max: 700 }),
    cost: fc.integer({ min: 1, max: 4 }),
    key: fc.constantFrom('a', 'b'),
    client: fc.constantFrom('192.0.2.1', '192.0.2.2'),
    release: fc.boolean(),
  }),
  { minLength: 1, maxLength: 25 },
);

describe('both limiters on random runs of requests', () => {
  it.each(TERMS.map((c) => [c.name, c] as const))('decide alike: %s', async (_name, terms) => {
    const limiters = [memory(), await redis()];
    await fc.assert(
      fc.asyncProperty(stepsOf, async (drawn) => {
        const run = runId();
        let at = 0;
        const steps: Step[] = drawn.map(({ gap, cost, key, client, release }, i) => ({
          at: (at += gap),
          cost,
          key: key in terms.keys ? key : 'a',
          client,
          ...(release && i > 0 && { release: i - 1 }),
        }));
        const c: ConformanceCase = { ...terms, steps };
        // One after the other: both move the one clock through the same instants.
        const byMemory = (await decide(limiters[0]!, c, run, clock, inProcess)).map(comparable);
        const byRedis = (await decide(limiters[1]!, c, run, clock, inRedis)).map(comparable);
        expect(byRedis).toEqual(byMemory);
      }),
      { numRuns: 12 },
    );
  });
});
