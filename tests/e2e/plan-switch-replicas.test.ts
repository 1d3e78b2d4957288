/**
 * Switching plans never grants a fresh quota across two built replicas on Redis and Postgres (contract
 * section 32, docs/guides/plans.md): 5 spent of a fixed 5 an hour over both replicas, then the key
 * switched to a sliding 5 an hour and to a token bucket of 5 an hour; neither replica admits more in
 * that hour, whichever of them hears of the switch first.
 */
import { HOUR_MS, TestClock } from '../helpers/test-clock.js';
import { hitFull, startFleet, waitFor, type Fleet } from './helpers/replicas.js';

let fleet: Fleet;
const PATH = '/v1/switching';
const clock = new TestClock();

beforeAll(async () => {
  fleet = await startFleet(2, clock.env);
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

it('admits 5 in the hour over both replicas, whatever the plans it was switched between', async () => {
  const [first, second] = fleet.members as [Fleet['members'][number], Fleet['members'][number]];
  const plans = {
    fixed: { name: 'fixed', limit: 5, period: 'hour' },
    sliding: { name: 'sliding', limit: 5, period: 'hour', algorithm: 'sliding' },
    bucket: { name: 'bucket', limit: 5, period: 'hour', algorithm: 'tokenBucket' },
  };
  for (const [rateLimitId, limit] of Object.entries(plans))
    expect((await first.admin('POST', '/rate-limit/create', { rateLimitId, limits: [limit] })).status).toBe(
      201,
    );
  const key = (
    await first.admin('POST', '/consumer-api-key/create', { name: 'switcher', rateLimitId: 'fixed' })
  ).body as { id: string; secret: string };
  // Two minutes into an hour: the test is over long before it ends.
  clock.after(HOUR_MS, 120_000);
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await hitFull(fleet.members[i % 2]!, key.secret, PATH)).status);
  expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);

  for (const rateLimitId of ['sliding', 'bucket']) {
    const applied = await second.admin('POST', '/api-keys/apply-rate-limit', {
      consumerApiKeyId: key.id,
      rateLimitId,
    });
    expect(applied.status).toBe(200);
    // Each replica is asked until its refusal names the new plan's limit: it decides by it then. Every
    // answer meanwhile is kept, so an admission under either plan shows.
    for (const replica of [first, second]) {
      const seen: number[] = [];
      await waitFor(
        async () => {
          const a = await hitFull(replica, key.secret, PATH);
          seen.push(a.status);
          return a.status === 429 ? (a.body.name as string) : String(a.status);
        },
        (name) => name === rateLimitId || name === '200',
        { what: `${replica.url} decides by ${rateLimitId}` },
      );
      expect(seen.filter((s) => s !== 429)).toEqual([]);
    }
    const after = [];
    for (let i = 0; i < 4; i++) after.push((await hitFull(fleet.members[i % 2]!, key.secret, PATH)).status);
    expect(after).toEqual([429, 429, 429, 429]);
  }
  expect(fleet.backend.received.filter((r) => r.url === PATH)).toHaveLength(5);
});
