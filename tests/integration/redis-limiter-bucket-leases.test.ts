/**
 * A hot key's token bucket leased to replicas (docs/decisions/0208), on a private redis-server: several
 * replicas of the Redis limiter race for one bucket with leases, and exactly its burst and refill get
 * in; a replica short of units gets those another sits on (the reclaim); a replica that dies holding a
 * lease never lets more through, its units counted as used once its leases lapse; a settlement of a
 * leased request is charged to the unit. The replicas' clock is the test's, so a lease ends, a reclaim
 * gives up and a refill comes when the test moves it, never by waiting.
 */
import { BUCKET_LAPSE_MS, LEASE_MS } from '../../src/limits/lease-book.js';
import type { Decision } from '../../src/limits/rate-limiter.js';
import { visitorOf } from '../../src/limits/visitor.js';
import type { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import type { Plan } from '../../src/plans/plan.js';
import { limiterReplicasFor } from '../helpers/limiter-replicas.js';
import { keyOnly, plan } from '../helpers/plans.js';
import { waitFor } from '../helpers/poll.js';

const PREFIX = 'bucket-leases:';
const fleet = limiterReplicasFor(PREFIX);
const DAY_MS = 86_400_000;
// Near the wall clock: a bucket's hash expires by the replicas' clock, and Redis keeps time by its own.
let now = Date.now();
const clock = () => now;
const replica = () => fleet.replica({ clock });
let keys = 0;
const newKey = () => `key_${keys++}`;
const bucketKey = (keyId: string) => `${PREFIX}{${keyId}}:bucket:day`;
/** A bucket that refills one unit a day: within a test only the burst counts, until the test moves a day on. */
const hotBucket = (burst: number): Plan => plan({ limit: 1, period: 'day', algorithm: 'tokenBucket', burst });

interface Load {
  readonly decisions: Decision[];
  /** Requests decided at once, without a call to Redis. */
  atOnce: number;
}

/** `turns` turns of `perTurn` requests of `cost` on `limiter`, each at the replicas' clock, the next turn once the last is answered. */
async function load(
  limiter: RedisRateLimiter,
  keyId: string,
  p: Plan,
  turns: number,
  perTurn: number,
  cost = 1,
): Promise<Load> {
  const out: Load = { decisions: [], atOnce: 0 };
  for (let t = 0; t < turns; t++) {
    const turn = Array.from({ length: perTurn }, () => limiter.consume(keyOnly(keyId, p), cost, now));
    out.atOnce += turn.filter((d) => !(d instanceof Promise)).length;
    out.decisions.push(...(await Promise.all(turn)));
  }
  return out;
}
const admittedUnits = (decisions: readonly Decision[], cost = 1) =>
  decisions.filter((d) => d.allowed).length * cost;
const field = async (keyId: string, name: string) =>
  Number((await fleet.admin.hget(bucketKey(keyId), name)) ?? 0);

describe('a token bucket leased to busy replicas', () => {
  it('admits exactly its burst when busy replicas race with leases, most requests decided without a call', async () => {
    const replicas = await Promise.all([replica(), replica(), replica(), replica()]);
    const keyId = newKey();
    const p = hotBucket(7_919);
    const loads = await Promise.all(replicas.map((r) => load(r, keyId, p, 200, 13)));
    const decisions = loads.flatMap((l) => l.decisions);
    expect(admittedUnits(decisions)).toBe(7_919);
    // Without leases every request waits for a call; with them most are decided at once.
    expect(loads.reduce((n, l) => n + l.atOnce, 0)).toBeGreaterThan(decisions.length / 2);
    expect(decisions.filter((d) => !d.allowed).every((d) => d.limit!.remaining === 0)).toBe(true);
    // Nothing is leased out any more: every unit was used or given back, and the bucket is empty.
    expect(await field(keyId, 'o')).toBe(0);
    expect(await field(keyId, 'u')).toBe(0);
    expect((await replicas[0]!.peek(keyOnly(keyId, p), now))[0]!.remaining).toBe(0);
  });

  it('admits exactly its refill over any stretch after the burst, leases or not', async () => {
    const replicas = await Promise.all([replica(), replica(), replica()]);
    const keyId = newKey();
    // 3,600 an hour, one a second: 2,000 units come in 2,000 s.
    const p = plan({ limit: 3_600, period: 'hour', algorithm: 'tokenBucket', burst: 5_000 });
    const first = await Promise.all(replicas.map((r) => load(r, keyId, p, 100, 20)));
    expect(admittedUnits(first.flatMap((l) => l.decisions))).toBe(5_000);
    now += 2_000_000; // 2,000 s: 2,000 units, under the burst
    const later = await Promise.all(replicas.map((r) => load(r, keyId, p, 100, 20)));
    expect(admittedUnits(later.flatMap((l) => l.decisions))).toBe(2_000);
  });

  it('hands the units one replica sits on to a replica short of them', async () => {
    const [holder, short] = await Promise.all([replica(), replica()]);
    const keyId = newKey();
    const p = hotBucket(3_000);
    // The holder gets busy and ends holding units it has not used.
    const early = await load(holder!, keyId, p, 50, 4);
    expect(await field(keyId, 'o')).toBeGreaterThan(0);
    // The other asks for far more than the rest: it gets every unit the holder did not use.
    const late = await load(short!, keyId, p, 1, 3_000);
    expect(admittedUnits(early.decisions) + admittedUnits(late.decisions)).toBe(3_000);
    expect(await field(keyId, 'o')).toBe(0);
    expect((await holder!.consume(keyOnly(keyId, p), 1, now)).allowed).toBe(false);
  });

  it('never admits more after a replica died holding a lease; its units count as used once its leases lapse', async () => {
    const dying = await fleet.replica({ clock });
    const survivor = await replica();
    const keyId = newKey();
    const p = hotBucket(2_000);
    const start = now;
    const early = await load(dying, keyId, p, 50, 4);
    // The process ends without settling: it no longer hears reclaims. The bucket still counts its leases
    // as outstanding (`o`), the units it used of them too: those are taken out when a lease is settled.
    await dying.close();
    const held = await field(keyId, 'o');
    const takenByCalls = await field(keyId, 'd');
    const usedOfLeases = admittedUnits(early.decisions) - takenByCalls;
    expect(held).toBeGreaterThan(usedOfLeases);
    // The survivor's requests that find the bucket short wait for the dead replica's units, which never
    // come: once the script has asked for them, a second on the clock ends the wait.
    const late = load(survivor, keyId, p, 20, 100);
    await waitFor(
      () => field(keyId, 'r'),
      (asked) => asked > 0,
    );
    now += 1_000;
    // It gets all but what the dead replica leased: its unused units are lost, never admitted twice.
    const unused = held - usedOfLeases;
    expect(admittedUnits((await late).decisions)).toBe(2_000 - admittedUnits(early.decisions) - unused);
    // Past the lapse its units are used ones: none comes back.
    now += LEASE_MS + BUCKET_LAPSE_MS;
    expect(admittedUnits((await load(survivor, keyId, p, 1, 50)).decisions)).toBe(0);
    expect(await field(keyId, 'o')).toBe(0);
    // What the bucket draws on refills as before: two days after the first unit was taken, two units.
    now = start + 2 * DAY_MS;
    expect(admittedUnits((await load(survivor, keyId, p, 1, 50)).decisions)).toBe(2);
  });

  it('charges a settled request of a leased bucket to the unit', async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    const keyId = newKey();
    const p = hotBucket(5_000);
    const subjects = keyOnly(keyId, p);
    // 500 requests reserving 2 units each, most of them from leases; each is settled at 1 (a refund
    // of 1) or 3 (one more), in turn.
    const busy = await load(a!, keyId, p, 100, 5, 2);
    const admitted = busy.decisions.filter((d) => d.allowed);
    expect(admitted).toHaveLength(500);
    let settled = 0;
    await Promise.all(
      admitted.map((decision, i) => {
        const units = i % 3 === 0 ? 3 : 1;
        settled += units;
        return a!.settle({ decision, subjects, reserved: 2, admittedMs: now }, units, now);
      }),
    );
    // The other replica drains the rest, 1 unit a request: exactly what the settled units left.
    const rest = await load(b!, keyId, p, 10, 1_000);
    expect(admittedUnits(rest.decisions)).toBe(5_000 - settled);
  });

  it('admits exactly its burst when Redis loses the bucket while units are leased out', async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    const keyId = newKey();
    const p = hotBucket(5_000);
    const early = (await Promise.all([load(a!, keyId, p, 40, 10), load(b!, keyId, p, 40, 10)])).flatMap(
      (l) => l.decisions,
    );
    expect(await field(keyId, 'o')).toBeGreaterThan(0);
    await fleet.admin.flushall();
    // Each replica puts back its record of the bucket and the units leased to it it has not settled:
    // those stay out of what the others draw on, and nothing is admitted twice.
    const late = (await Promise.all([load(a!, keyId, p, 20, 300), load(b!, keyId, p, 20, 300)])).flatMap(
      (l) => l.decisions,
    );
    expect(admittedUnits(early) + admittedUnits(late)).toBe(5_000);
  });

  it('never leases a visitor’s bucket: each request of a busy visitor is decided in Redis, exactly', async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    const keyId = newKey();
    const p = plan({ limit: 1, period: 'day', algorithm: 'tokenBucket', burst: 3_000, per: 'clientAddress' });
    const visitor = visitorOf('203.0.113.7', undefined);
    let atOnce = 0;
    const decisions: Decision[] = [];
    for (let turn = 0; turn < 40; turn++) {
      const requests = Array.from({ length: 100 }, (_, i) =>
        (i % 2 === 0 ? a! : b!).consume(keyOnly(keyId, p), 1, now, visitor),
      );
      atOnce += requests.filter((d) => !(d instanceof Promise)).length;
      decisions.push(...(await Promise.all(requests)));
    }
    expect(atOnce).toBe(0);
    expect(admittedUnits(decisions)).toBe(3_000);
  });
});
