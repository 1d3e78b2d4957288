import { DIRECT_SCRIPTS, type RedisClient } from '../redis/connect.js';
import { definePerKeyCount } from '../redis/script.js';
import type { BalanceSeen, BalanceTerms } from './balance-lua.js';
import { leaseBookKey } from './limiter-keys.js';
import type { ConsumeReply } from './consume-reply.js';
import type { LeaseTerms } from './lease-book.js';
import { ALGORITHMS_LUA, TWIN_OF } from './core/algorithms.js';
import { BALANCE_LUA } from './core/balance.lua.js';
import { COMBINE_LUA } from './core/combine.lua.js';
import type { ConsumeLimit, WindowLimit } from './core/redis-twin.js';
import type { BucketLimit } from './core/token-bucket.lua.js';

/**
 * Check and charge in one atomic step, across every limit and balance of every subject of a decision (a
 * key's and its consumer's), for a batch of one replica's requests plus, per subject, units leased to it
 * ahead of its requests. Each algorithm is a Lua twin of its core module (core/*.lua.ts: `lost`, `read`,
 * `charge`, registered by its name in `ALGORITHMS`: core/algorithms.ts), balances too
 * (core/balance.lua.ts), and the batch is fitted by the combiner's twin (core/combine.lua.ts); this
 * dispatcher reads the call, asks each limit's algorithm in turn and writes the reply, naming none. A
 * subject's lease (the same number of units in each of its limits) is granted only when no request was
 * refused and each of its limits holds 1,024 more, and is at most a sixteenth of what its tightest limit
 * holds, so small limits and the last units of a window are decided one call at a time. A token bucket's
 * lease is taken out of the bucket at once and settled with the replica's leases it is done with
 * (core/token-bucket.lua.ts, docs/decisions/0208); a concurrency limit leases places to a replica's
 * pool by its own rule (core/concurrency.lua.ts, docs/decisions/0209), never a subject's lease.
 *
 * KEYS: per limit, its count then its lease book, subject after subject; then one hash per balance.
 * ARGV[1]: the call as JSON (`consumeArgs`): {now, reclaimChannel, subjects: [{lease, settled,
 * returned, limits: [{algorithm, limit, …, known}], balance: {terms, seen}}], runs}, by name.
 *
 * A limit or balance found below what the caller knows of it (`known`, `seen`: each algorithm's `lost`
 * says how) means Redis lost keys while it stayed up (a flush, an eviction, a deletion), unless its book
 * is marked moved (recovery/key-homes.ts): the call decides and charges nothing and answers `lost` with the
 * limits and balances found so (recovery/loss-detection.ts puts them back).
 *
 * When a request does not fit a window while leased units of it are outstanding, the call says `held`
 * and publishes that limit's count key on the reclaim channel (settleBook): holders give back what they
 * have not used, settle what they used, and the caller asks again, until nothing is outstanding or
 * RECLAIM_WAIT_MS have passed since the first reclaim. So with limit L, L units are admitted per window
 * even when a replica sits on leased units.
 * Returns ConsumeReply.
 */
const CONSUME_LUA = `
${ALGORITHMS_LUA}
${BALANCE_LUA}
${COMBINE_LUA}
local call = cjson.decode(ARGV[1])
local now, subjects = call.now, call.subjects
local limits, subjectOf, balances = {}, {}, {}
for s, subject in ipairs(subjects) do
  for _, l in ipairs(subject.limits) do
    limits[#limits + 1] = l
    subjectOf[#limits] = s
  end
  if subject.balance then balances[#balances + 1] = subject.balance end
end
local n = #limits
local lost = {}
for i = 1, n do
  local l = limits[i]
  if l.known and ALGORITHMS[l.algorithm].lost(l, KEYS[2 * i - 1], KEYS[2 * i], now)
    and not redis.call('HGET', KEYS[2 * i], 'm') then lost[#lost + 1] = i end
end
for k = 1, #balances do
  if balanceLost(balances[k], KEYS[2 * n + k]) then lost[#lost + 1] = n + k end
end
if #lost > 0 then return {2, unpack(lost)} end
local counts, oldest, states = {}, {}, {}
local room, placeRoom = math.huge, math.huge
for i = 1, n do
  local l = limits[i]
  local algorithm = ALGORITHMS[l.algorithm]
  local subject = subjects[subjectOf[i]]
  counts[i], oldest[i], states[i] = algorithm.read(l, KEYS[2 * i - 1], subject.returned, now, subject)
  if algorithm.places then placeRoom = math.min(placeRoom, l.limit - counts[i])
  else room = math.min(room, l.limit - counts[i]) end
end
local settled = {}
for k = 1, #balances do
  settled[k] = {settleTerms(KEYS[2 * n + k], balances[k].terms)}
  room = math.min(room, settled[k][3] - settled[k][4])
end
local fits, want, admitted, requests = fitRuns(call.runs, room, placeRoom)
local refused = admitted < want
local leased, spare = {}, {}
for s = 1, #subjects do leased[s] = 0 end
for i = 1, n do
  local s, free = subjectOf[i], limits[i].limit - counts[i] - admitted
  if spare[s] == nil or free < spare[s] then spare[s] = free end
end
for s = 1, #subjects do
  if not refused and spare[s] ~= nil and spare[s] >= 1024 then leased[s] = math.min(subjects[s].lease, math.floor(spare[s] / 16)) end
end
local reply = {0}
for i = 1, n do
  local l, s = limits[i], subjectOf[i]
  local algorithm = ALGORITHMS[l.algorithm]
  local taken = algorithm.charge(l, KEYS[2 * i - 1], states[i], admitted, leased[s], requests, now)
  if algorithm.book and algorithm.book(l, KEYS[2 * i - 1], KEYS[2 * i], states[i], leased[s], subjects[s].settled, refused, l.limit - counts[i] < want, now, call.reclaimChannel) == 1 then reply[1] = 1 end
  reply[2 * i] = counts[i] + taken
  reply[2 * i + 1] = algorithm.replied and algorithm.replied(states[i]) or oldest[i]
end
for s = 1, #subjects do reply[2 * n + 1 + s] = leased[s] end
for k = 1, #balances do
  local at = 2 * n + 1 + #subjects + 4 * (k - 1)
  reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4] = balanceCharge(KEYS[2 * n + k], settled[k], admitted)
end
for r = 1, #fits do reply[2 * n + 1 + #subjects + 4 * #balances + r] = fits[r] end
return reply
`;

/** What a consume call gives back of this replica's idle places in one count, and asks for ahead of requests. */
export interface PlaceTerms {
  readonly give: number;
  readonly lease: number;
}

/** What the caller knows of a window's count or slot (WindowLedger.knownOf). */
export interface WindowKnown {
  readonly places: number;
  readonly marker: string;
}

/** What the caller knows of a token bucket (BucketLedger.recordOf). */
export interface BucketKnown {
  readonly units: number;
  readonly parts: number;
  readonly at: number;
  readonly held: number;
  readonly marker: string;
}

/** What the caller knows of a concurrency limit's count (PlacesLedger.knownOf). */
export interface PlacesKnown {
  readonly held: number;
  readonly sureUntil: number;
  readonly marker: string;
}

/** What the caller knows of one limit, by its algorithm; undefined for nothing. */
export type LimitKnown = WindowKnown | BucketKnown | PlacesKnown | undefined;

/** Whether a limit of a call counts in windows: those alone are leased always and kept in the window ledger. */
export const inWindows = (l: ConsumeLimit): l is WindowLimit => TWIN_OF[l.algorithm].kind === 'window';

/** Whether a limit of a call is a token bucket's. */
export const isBucketLimit = (l: ConsumeLimit): l is BucketLimit => TWIN_OF[l.algorithm].kind === 'bucket';

/** The slot of a window limit as the recovery ledger keys it: a sliding limit's, -1 for a fixed window. */
export const slotOf = (l: WindowLimit): number => (l.slot === undefined ? -1 : Number(l.slot));

/** A balance of a call: its record, and the most the caller saw spent of it (undefined: nothing yet). */
export interface CallBalance {
  readonly terms: BalanceTerms;
  readonly seen: BalanceSeen | undefined;
}

export interface ConsumeCall {
  /** Epoch ms, on the clock every replica shares (NTP): reclaim waits are timed by it. */
  readonly now: number;
  /** Where to ask holders for leased units back. */
  readonly reclaimChannel: string;
  /** Per subject, in KEYS order: its lease terms, its limits and its balance (undefined: none). */
  readonly leases: readonly LeaseTerms[];
  readonly limits: readonly (readonly ConsumeLimit[])[];
  /** Per limit (every subject's, in KEYS order), what the caller knows of its count (LimitKnown). */
  readonly known: readonly LimitKnown[];
  /** Per limit, in KEYS order, the idle places a concurrency limit's call gives back and leases (absent: none). */
  readonly places?: readonly (PlaceTerms | undefined)[];
  readonly balances: readonly (CallBalance | undefined)[];
  /** The requests to decide, in arrival order, as runs of one cost: requests, cost, requests, cost, … */
  readonly runs: readonly number[];
}

/** The script's KEYS: each limit's count, then its lease book; then each balance's hash. */
export function consumeKeys(counts: readonly string[], balances: readonly string[] = []): string[] {
  return [...counts.flatMap((count) => [count, leaseBookKey(count)]), ...balances];
}

/** The script's ARGV: the call as one JSON document, each part by name (see CONSUME_LUA). */
export function consumeArgs(call: ConsumeCall): string[] {
  let i = 0;
  return [
    JSON.stringify({
      now: call.now,
      reclaimChannel: call.reclaimChannel,
      subjects: call.leases.map((terms, s) => {
        const balance = call.balances[s];
        const limits = call.limits[s]!;
        return {
          lease: terms.lease,
          settled: terms.settled,
          returned: terms.returned,
          ...(terms.ended !== undefined &&
            terms.ended.length > 0 &&
            limits.some(isBucketLimit) && { ended: terms.ended }),
          limits: limits.map((l) => {
            const j = i++;
            return limitArgs(l, call.known[j], call.places?.[j]);
          }),
          ...(balance !== undefined && {
            balance: {
              terms: balance.terms,
              seen: balance.seen ?? { epoch: 0, window: 0, spent: 0 },
            },
          }),
        };
      }),
      runs: call.runs,
    }),
  ];
}

/** One limit of a call by name: its algorithm, its terms, its pool's terms and what the caller knows of it. */
function limitArgs(l: ConsumeLimit, known: LimitKnown, places: PlaceTerms | undefined): object {
  return known === undefined && places === undefined
    ? l
    : { ...l, ...places, ...(known !== undefined && { known }) };
}

export type ConsumeScript = (keys: readonly string[], call: ConsumeCall) => Promise<ConsumeReply>;

/** Defines the script on `client` (at start-up: see defineScript), once per number of keys in a call. */
export function defineConsumeScript(client: RedisClient): ConsumeScript {
  const run = definePerKeyCount(client, DIRECT_SCRIPTS.consume, CONSUME_LUA);
  return (keys, call) => run(keys, consumeArgs(call)) as Promise<ConsumeReply>;
}
