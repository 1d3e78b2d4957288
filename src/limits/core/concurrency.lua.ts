import { placesIn } from '../concurrency-places.js';
import { EXPIRY_GRACE_MS } from '../limiter-keys.js';
import { noWindow, type ConsumeLimit, type Holder, type RedisTwin } from './redis-twin.js';

/**
 * The concurrency limit (concurrency.ts, docs/decisions/0096) in the consume script: a hash of places
 * per replica, `p:<replica>`, each replica's expiring at `x:<replica>` unless its heartbeat renews them
 * (concurrency-places.ts); expired ones are dropped as they are met. `e` is the latest expiry, `k` on a
 * count put back Redis' marker as the replica that put it back read it. `l` is the limit's table of the
 * call ({limit, leaseMs, replica, known: the caller's {held, sureUntil, marker}}).
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
-- The places in flight, every live replica's.
local function placesRead(l, key, _, now)
  local fields = redis.call('HGETALL', key)
  local places, expiry = {}, {}
  for j = 1, #fields, 2 do
    local tag = string.sub(fields[j], 1, 2)
    if tag == 'p:' then places[string.sub(fields[j], 3)] = tonumber(fields[j + 1])
    elseif tag == 'x:' then expiry[string.sub(fields[j], 3)] = tonumber(fields[j + 1]) end
  end
  local count = 0
  for replica, held in pairs(places) do
    if tonumber(expiry[replica] or '0') < now then
      redis.call('HDEL', key, 'p:' .. replica, 'x:' .. replica)
    else
      count = count + held
    end
  end
  return count, 0
end
-- One place per admitted request, whatever its cost.
local function placesCharge(l, key, _, _, _, requests, now)
  if requests == 0 then return 0 end
  local deadline = now + l.leaseMs
  local latest = math.max(deadline, tonumber(redis.call('HGET', key, 'e') or '0'))
  redis.call('HINCRBY', key, 'p:' .. l.replica, requests)
  redis.call('HSET', key, 'x:' .. l.replica, string.format('%.0f', deadline), 'e', string.format('%.0f', latest))
  redis.call('PEXPIREAT', key, string.format('%.0f', latest + ${EXPIRY_GRACE_MS}))
  return requests
end
ALGORITHMS.concurrency = {lost = placesLost, read = placesRead, charge = placesCharge, places = true}
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
  // Its places are not leased: nothing is left to settle.
  over: () => true,
  stored: async (client, count, _rule, nowMs) => placesIn(await client.hgetall(count), nowMs),
};
