import { wholeOf, type LimitRule, type Plan } from '../plans/plan.js';
import type { Subject } from '../plans/subject.js';
import { windowAt } from '../plans/window.js';
import type { RedisClient } from '../redis/connect.js';
import { defineKeyListScript, type ScriptRunner } from '../redis/script.js';
import { TWIN_OF } from './core/algorithms.js';
import { carriesInto } from './core/plan-switch.js';
import { PLAN_SWITCH_LUA } from './core/plan-switch.lua.js';
import { NO_HOLDER, UNREAD, type ConsumeLimit } from './core/redis-twin.js';
import { countsBase, limitCountKey, planMarkKey } from './limiter-keys.js';

/**
 * Switching plans never grants a fresh quota, across replicas (docs/decisions/0175): Redis keeps, beside
 * each subject's counts, the plan they were last decided by (planMarkKey). A replica that first decides
 * for a subject under a plan (its whole plan: a request's selection of limits is no switch) sets it
 * when there is none, else reads it; when it names another plan, one script raises each count of the new plan to what the old plan's
 * counts of the same period spent in their current windows (core/plan-switch.ts), and writes the new
 * plan, in one atomic step that only the first replica to get there makes (the mark it read must still
 * be there). The subject's first decision under the new plan waits for it.
 *
 * What the old counts hold includes units leased from them and not yet used: carried as spent, they
 * are never admitted twice. A replica that has not heard of the switch yet (its key cache) still
 * decides by the old plan until it does; what it admits meanwhile is not carried.
 */

/**
 * KEYS: the mark, then the old plan's counts, then the new plan's. ARGV[1]: JSON {expected: the mark as
 * read, mark, expiresAt, now, old: [limit], next: [{limit, from: [old indices]}]}. Returns 0
 * when the mark changed since it was read (read it again), else 1.
 */
const SWITCH_LUA = `
${PLAN_SWITCH_LUA}
local call = cjson.decode(ARGV[1])
if redis.call('GET', KEYS[1]) ~= call.expected then return 0 end
local spent = {}
for i, l in ipairs(call.old) do spent[i] = spentIn(l, KEYS[1 + i], call.now) end
for j, n in ipairs(call.next) do
  local units = 0
  for _, i in ipairs(n.from) do units = math.max(units, spent[i]) end
  if units > 0 then raiseTo(n.limit, KEYS[1 + #call.old + j], units, call.now) end
end
redis.call('SET', KEYS[1], call.mark, 'PXAT', call.expiresAt)
return 1
`;

/** A mark lasts this long from its plan's first decision or switch: longer than any count (a year's window). */
const MARK_MS = 400 * 86_400_000;

/** What a mark holds. */
interface PlanMark {
  readonly tag: string;
  readonly limits: readonly LimitRule[];
}

export class PlanSwitches {
  /** By counts' base: the tag of the whole plan this replica last saw them decided by. */
  private readonly seen = new Map<string, string>();
  private readonly switchScript: ScriptRunner;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    /** The consume script's clock (limit-batches.ts), which token buckets are brought up to. */
    private readonly clock: () => number,
  ) {
    this.switchScript = defineKeyListScript(client, SWITCH_LUA);
  }

  /**
   * Resolves once `subject`'s counts under `hashTag` are those of its plan; undefined (no command) when
   * this replica already saw them so. Rejects when Redis does not answer (the next decision tries again).
   */
  switched(subject: Subject, hashTag: string, nowMs: number): Promise<void> | undefined {
    const whole = wholeOf(subject.plan);
    const base = countsBase(this.prefix, subject, hashTag);
    if (this.seen.get(base) === whole.tag) return undefined;
    return this.switchTo(base, whole, nowMs).then(() => {
      this.seen.set(base, whole.tag);
    });
  }

  private async switchTo(base: string, whole: Plan, nowMs: number): Promise<void> {
    const markKey = planMarkKey(base);
    const expiresAt = nowMs + MARK_MS;
    const mark = JSON.stringify({ tag: whole.tag, limits: whole.limits } satisfies PlanMark);
    for (;;) {
      // Set when there is none yet (a subject's first decision): one command, nothing to carry.
      const held = (await this.client.set(markKey, mark, 'PXAT', expiresAt, 'NX', 'GET')) as string | null;
      if (held === null) return;
      const old = JSON.parse(held) as PlanMark;
      if (old.tag === whole.tag) return;
      const { keys, args } = switchCall(base, held, old.limits, mark, whole, nowMs, this.clock());
      if ((await this.switchScript(keys, args)) === 1) return;
    }
  }
}

/**
 * The script's call for a switch from `old` (the limits of mark `held`) to `whole`: the old limits that
 * carry into one of the new plan, and the new plan's limits that one of them carries into; windows at
 * `nowMs` (the request's), token buckets brought up to `bucketNowMs`, as the consume script does.
 */
function switchCall(
  base: string,
  held: string,
  old: readonly LimitRule[],
  mark: string,
  whole: Plan,
  nowMs: number,
  bucketNowMs: number,
): { keys: string[]; args: string[] } {
  const next = whole.limits.filter((rule) => old.some((o) => carriesInto(o, rule)));
  const from = old.filter((o) => next.some((rule) => carriesInto(o, rule)));
  const call = {
    expected: held,
    mark,
    expiresAt: nowMs + MARK_MS,
    now: bucketNowMs,
    old: from.map((rule) => limitTable(rule, nowMs)),
    next: next.map((rule) => ({
      limit: limitTable(rule, nowMs),
      from: from.flatMap((o, i) => (carriesInto(o, rule) ? [i + 1] : [])),
    })),
  };
  const counts = [...from, ...next].map((rule) =>
    limitCountKey(base, rule, windowAt(rule.period, nowMs).start),
  );
  return { keys: [planMarkKey(base), ...counts], args: [JSON.stringify(call)] };
}

/** A limit that carries (fixed, sliding or token bucket) as the consume script's twins read it: held by no replica. */
function limitTable(rule: LimitRule, nowMs: number): ConsumeLimit {
  return TWIN_OF[rule.algorithm].span(rule, nowMs, NO_HOLDER, UNREAD);
}
