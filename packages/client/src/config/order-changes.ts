/**
 * The order that never breaks a reference: creations and updates kind by kind (routes, plans, consumers,
 * webhooks, billing exports, the portal's settings: a plan's routes exist before it, a consumer's plan
 * before the consumer, the portal's public plans before the portal offers them),
 * then deletions in the reverse order (what refers to an object goes before it).
 */
import type { Change } from './change.js';
import type { ChangePlan } from './plan-changes.js';

export function inOrder(plan: ChangePlan): Change[] {
  return [
    ...plan.changes.flatMap((c) => c.upserts),
    ...[...plan.changes].reverse().flatMap((c) => c.deletions),
  ];
}
