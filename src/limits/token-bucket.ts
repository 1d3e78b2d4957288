import { BUCKET_PERIOD_MS, type LimitRule } from '../plans/plan.js';

/**
 * Token buckets in whole numbers (docs/decisions/0095). A bucket of `burst` units refills at `limit`
 * units per period of P ms: each millisecond adds `limit` parts, and P parts make a unit. A bucket is
 * `{units, parts, at}`: whole units held, the parts towards the next one (0 ≤ parts < P, 0 when full)
 * and the time it was brought up to. Every step is integer arithmetic below 2^53 (a plan's limit is
 * refused when `(limit + 1) × P` is not: tokenBucketProblem), so replicas and Lua agree to the unit.
 *
 * Pure functions: every caller passes the clock in. Time never runs back: a bucket brought up to `at`
 * stays there for a caller whose clock is behind.
 */
export interface Bucket {
  readonly units: number;
  readonly parts: number;
  readonly at: number;
}

/** The period of a token bucket's rule in ms. */
export function bucketPeriodMs(rule: LimitRule): number {
  return BUCKET_PERIOD_MS[rule.period as keyof typeof BUCKET_PERIOD_MS];
}

/** A bucket first met at `nowMs`: full. */
export const fullBucket = (rule: LimitRule, nowMs: number): Bucket => ({
  units: rule.burst!,
  parts: 0,
  at: nowMs,
});

/** `bucket` brought up to `nowMs`: refilled by the time since, up to its burst. */
export function refilled(bucket: Bucket, rule: LimitRule, nowMs: number): Bucket {
  if (nowMs <= bucket.at) return bucket;
  const periodMs = bucketPeriodMs(rule);
  const burst = rule.burst!;
  const elapsed = nowMs - bucket.at;
  const parts = (elapsed % periodMs) * rule.limit + bucket.parts;
  const units = bucket.units + Math.floor(elapsed / periodMs) * rule.limit + Math.floor(parts / periodMs);
  return units >= burst
    ? { units: burst, parts: 0, at: nowMs }
    : { units, parts: parts % periodMs, at: nowMs };
}

/**
 * When a bucket brought up to `bucket.at` holds `units` (epoch ms): `bucket.at` when it does already,
 * else rounded up to the whole second, as `resetTime` is written (and `Retry-After` counts to it).
 */
export function holdsAt(bucket: Bucket, rule: LimitRule, units: number): number {
  if (bucket.units >= units) return bucket.at;
  const periodMs = bucketPeriodMs(rule);
  const at = bucket.at + Math.ceil(((units - bucket.units) * periodMs - bucket.parts) / rule.limit);
  return Math.ceil(at / 1_000) * 1_000;
}

/**
 * The same in Lua, for the consume script: `refill(units, parts, at, now, limit, burst, periodMs)`
 * returns the bucket brought up to `now`.
 */
export const BUCKET_LUA = `
local function refill(units, parts, at, now, limit, burst, periodMs)
  if now <= at then return units, parts, at end
  local elapsed = now - at
  local p = (elapsed % periodMs) * limit + parts
  local u = units + math.floor(elapsed / periodMs) * limit + math.floor(p / periodMs)
  if u >= burst then return burst, 0, now end
  return u, p % periodMs, now
end
`;
