import { planOf, ruleOf, type LimitInput, type Plan } from '../../src/plans/plan.js';
import type { Subject } from '../../src/plans/subject.js';

/** A plan of `limits`, their names and algorithms defaulted as the management API does. */
export function plan(...limits: LimitInput[]): Plan {
  return planOf(limits.map(ruleOf));
}

/** The subjects of a decision for a key without a consumer. */
export function keyOnly(id: string, p: Plan): Subject[] {
  return [{ scope: 'key', id, plan: p }];
}
