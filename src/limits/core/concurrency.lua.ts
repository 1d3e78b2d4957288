import { EXPIRY_GRACE_MS } from '../limiter-keys.js';
import { noWindow, type ConsumeLimit, type Holder, type RedisTwin } from './redis-twin.js';

/**
 * The concurrency limit (concurrency.ts, docs/decisions/0096) in the consume script: a hash of places
 * per replica, `p:<replica>`, each replica's expiring at `x:<replica>` unless its heartbeat renews them
 * (concurrency-places.ts); expired ones are dropped as they are met. `e` is the latest expiry, `k` on a
 * count put back Redis' marker as the replica that put it back read it. `l` is the limit's table of the
 * call ({limit, leaseMs, replica, known: the caller's {held, sureUntil, marker}, give, lease}).
 *
 * Pools (docs/decisions/0209): `l:<replica>` marks a replica that keeps places idle for its requests
 * to come, counted in its `p:`. A call gives back `give` idle places of the caller before it counts,
 * and when it refused no request leases it up to `lease` more, a quarter of the places left at most.
 * A call refused for want of places while another live replica keeps a pool publishes the count on
 * the reclaim channel and answers `held` (ask again): holders give back their idle places and end
 * their pool; `r` is when the first of those asks came (asks stop RECLAIM_WAIT_MS after it, until a
 * call finds room or no pool left). A call's state of the count is {count, pools, granted, asked}.
 */
export const CONCURRENCY_LUA = `
local function placesLost(l, key, _, now)
  local known = l.known
  local h = redis.call('HMGET', key, 'p:' .. l.replica, 'x:' .. l.replica, 'e', 'k')
  -- The places the caller holds, lapsed or fewer; or the count gone while it is sure to be there.
  local below = (known.held > 0 and (tonumber(h[1] or '0') < known.held or tonumber(h[2] or '0') < now))
    or (not h[3] and now < known.sureUntil)
  -- Put back after a loss the caller has not learned of: the places of a replica that has not put
  -- back yet are not in it, and would be taken again.
  if not below and known.marker ~= '' and h[4] then below = h[4] ~= known.marker end
  return below
end
-- The places held, every live replica's, once the caller gave back its idle ones; and the live pools of others.
local function placesRead(l, key, _, now)
  local fields = redis.call('HGETALL', key)
  local places, expiry, pooled, asked = {}, {}, {}, false
  for j = 1, #fields, 2 do
    local tag, replica = string.sub(fields[j], 1, 2), string.sub(fields[j], 3)
    if tag == 'p:' then places[replica] = tonumber(fields[j + 1])
    elseif tag == 'x:' then expiry[replica] = tonumber(fields[j + 1])
    elseif tag == 'l:' then pooled[replica] = true
    elseif fields[j] == 'r' then asked = true end
  end
  local own, give = l.replica, l.give or 0
  if give > 0 and places[own] then
    places[own] = places[own] - give
    if places[own] > 0 then redis.call('HSET', key, 'p:' .. own, places[own])
    else
      redis.call('HDEL', key, 'p:' .. own, 'x:' .. own, 'l:' .. own)
      places[own] = nil
    end
  end
  local count, pools = 0, 0
  for replica, held in pairs(places) do
    if tonumber(expiry[replica] or '0') < now then
      redis.call('HDEL', key, 'p:' .. replica, 'x:' .. replica, 'l:' .. replica)
    else
      count = count + held
      if pooled[replica] and replica ~= own then pools = pools + 1 end
    end
  end
  return count, 0, {count = count, pools = pools, granted = 0, asked = asked}
end
-- Takes n places for the caller, each sure for a lease.
local function placesTake(l, key, n, now)
  local deadline = now + l.leaseMs
  local latest = math.max(deadline, tonumber(redis.call('HGET', key, 'e') or '0'))
  redis.call('HINCRBY', key, 'p:' .. l.replica, n)
  redis.call('HSET', key, 'x:' .. l.replica, string.format('%.0f', deadline), 'e', string.format('%.0f', latest))
  redis.call('PEXPIREAT', key, string.format('%.0f', latest + ${EXPIRY_GRACE_MS}))
end
-- One place per admitted request, whatever its cost.
local function placesCharge(l, key, st, _, _, requests, now)
  st.count = st.count + requests
  if requests > 0 then placesTake(l, key, requests, now) end
  return requests
end
-- The caller's pool leased, or other replicas' asked for their idle places back (1: ask again).
local function placesBook(l, key, _, st, _, _, refused, _, now, channel)
  if refused and st.count >= l.limit and st.pools > 0 then return askBack(key, now, channel) end
  -- The shortage is over, or no pool is left to ask: a shortage after this asks again.
  if st.asked then redis.call('HDEL', key, 'r') end
  if refused then return 0 end
  local granted = math.min(l.lease or 0, math.floor((l.limit - st.count) / 4))
  if granted > 0 then
    placesTake(l, key, granted, now)
    redis.call('HSET', key, 'l:' .. l.replica, '1')
    st.granted = granted
  end
  return 0
end
-- Its second number in the consume script's reply: the places leased to the caller's pool.
local function placesReplied(st)
  return st.granted
end
ALGORITHMS.concurrency = {lost = placesLost, read = placesRead, charge = placesCharge, book = placesBook,
  replied = placesReplied, places = true}
`;

/** A concurrency limit: places held by its holder's `replica`, each sure for `leaseMs` unless renewed. */
export type PlacesLimit = ConsumeLimit & Holder & { readonly algorithm: 'concurrency' };

/** The concurrency limit in Redis: its count, `<base>:concurrency` (limiter-keys.ts), has no window and no units to settle. */
export const concurrencyTwin: RedisTwin = {
  lua: CONCURRENCY_LUA,
  kind: 'places',
  span(rule, nowMs, holder, at): PlacesLimit {
    noWindow(at, nowMs);
    return { algorithm: 'concurrency', limit: rule.limit, leaseMs: holder.leaseMs, replica: holder.replica };
  },
  settled: () => undefined,
  // Its places go to pools (concurrency-places.ts), never a span's leases: nothing is left to settle.
  over: () => true,
  stored: async (client, count, _rule, nowMs) => placesIn(await client.hgetall(count), nowMs),
};

/**
 * The places a concurrency count holds at `nowMs`, as stored (`p:<replica>`, `x:<replica>`): the
 * unexpired replicas', in flight or idle in a replica's pool.
 */
function placesIn(stored: Readonly<Record<string, string>>, nowMs: number): number {
  let places = 0;
  for (const [field, value] of Object.entries(stored)) {
    if (!field.startsWith('p:')) continue;
    const expiresAt = Number(stored['x:' + field.slice(2)] ?? 0);
    if (expiresAt >= nowMs) places += Number(value);
  }
  return places;
}
