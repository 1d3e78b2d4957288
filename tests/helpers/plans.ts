import { planOf, ruleOf, type LimitInput, type Plan } from '../../src/limits/plan.js';

/** A plan of `limits`, their names and algorithms defaulted as the management API does. */
export function plan(...limits: LimitInput[]): Plan {
  return planOf(limits.map(ruleOf));
}
