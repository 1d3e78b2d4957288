/**
 * A key whose plans depend on the request (docs/decisions/0034-route-aware-plans.md): limits that count only
 * the requests they match, and costs. Built once per key when it is looked up; a request reads its matches
 * and finds the subjects of the limits it selects in a small cache, so the request path allocates nothing
 * once a selection has been seen.
 */
import { MAX_LIMITS, planOf, wholeOf, type CostRule, type Plan } from './plan.js';
import { matches, matchesBeside, type RequestFacts } from './request-match.js';
import { subjectsOf, type Subject, type Terms } from './subject.js';

type Priced = { readonly id: string } & Terms;

export class Pricing {
  /** Subjects by selection: bit i for limit i of the key's plan, bit MAX_LIMITS + i for its consumer's. */
  private readonly bySelection = new Map<number, readonly Subject[] | undefined>();

  private constructor(
    private readonly key: Priced,
    private readonly consumer: Priced | undefined,
  ) {}

  /**
   * Undefined when neither plan holds a limit with a match or a cost: then every request of the key is
   * charged 1 to every limit, and the key's subjects serve as they are.
   */
  static of(key: Priced, consumer: Priced | undefined): Pricing | undefined {
    const dependsOnRequest = (plan: Plan | undefined) =>
      plan !== undefined && (plan.costs.length > 0 || plan.limits.some((l) => l.match !== undefined));
    return dependsOnRequest(key.plan) || dependsOnRequest(consumer?.plan)
      ? new Pricing(key, consumer)
      : undefined;
  }

  /**
   * The subjects a request is charged to (the limits without a match and those it matches, and the
   * balances); undefined: nothing limits it.
   */
  subjectsFor(request: RequestFacts): readonly Subject[] | undefined {
    const selection =
      selected(this.key.plan, request) | (selected(this.consumer?.plan, request) << MAX_LIMITS);
    if (this.bySelection.has(selection)) return this.bySelection.get(selection);
    const { key, consumer } = this;
    const subjects = subjectsOf(
      key.id,
      { plan: narrowed(key.plan, selection), balance: key.balance },
      consumer && {
        id: consumer.id,
        plan: narrowed(consumer.plan, selection >> MAX_LIMITS),
        balance: consumer.balance,
      },
    );
    this.bySelection.set(selection, subjects);
    return subjects;
  }

  /**
   * Whether the request's JSON body may decide its limits or cost: a limit or cost matching on it, or a
   * cost reserving from it, whose other conditions the request meets. Only then is its body read.
   */
  readsBody(request: RequestFacts): boolean {
    return readsBody(this.key.plan, request) || readsBody(this.consumer?.plan, request);
  }

  /** The first cost of the key's plan the request matches, else of its consumer's plan; undefined: none. */
  costRuleOf(request: RequestFacts): CostRule | undefined {
    return firstCost(this.key.plan, request) ?? firstCost(this.consumer?.plan, request);
  }
}

function readsBody(plan: Plan | undefined, request: RequestFacts): boolean {
  if (plan === undefined) return false;
  for (const { match } of plan.limits)
    if (match?.body !== undefined && matchesBeside(match, request)) return true;
  for (const { match, reserve } of plan.costs)
    if ((match.body !== undefined || reserve !== undefined) && matchesBeside(match, request)) return true;
  return false;
}

/** Bit i set when limit i of `plan` counts the request. */
function selected(plan: Plan | undefined, request: RequestFacts): number {
  if (plan === undefined) return 0;
  let bits = 0;
  const limits = plan.limits;
  for (let i = 0; i < limits.length; i++) {
    const match = limits[i]!.match;
    if (match === undefined || matches(match, request)) bits |= 1 << i;
  }
  return bits;
}

/** The plan of the limits `bits` selects; undefined when it selects none. */
function narrowed(plan: Plan | undefined, bits: number): Plan | undefined {
  if (plan === undefined) return undefined;
  const limits = plan.limits.filter((_, i) => (bits & (1 << i)) !== 0);
  return limits.length === 0 ? undefined : { ...planOf(limits, plan.costs), whole: wholeOf(plan) };
}

function firstCost(plan: Plan | undefined, request: RequestFacts): CostRule | undefined {
  if (plan === undefined) return undefined;
  for (const rule of plan.costs) if (matches(rule.match, request)) return rule;
  return undefined;
}
