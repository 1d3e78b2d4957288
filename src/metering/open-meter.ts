import { HeaderMeter } from './header-meter.js';
import { JsonBodyMeter } from './json-body-meter.js';
import { METER_BOUNDS_DEFAULT, type MeterBounds } from './meter-bounds.js';
import { QuantityPlan } from './quantity-tally.js';
import { quantitiesOf, type SettleRule } from './settle-rule.js';
import { SseMeter } from './sse-meter.js';
import type { HeaderBag, UnitMeter } from './unit-meter.js';

const CONTENT_TYPE = 'content-type';
const EVENT_STREAM = /^\s*text\/event-stream\s*(;|$)/i;

const isEventStream = (contentType: string | string[] | undefined) =>
  typeof contentType === 'string' && EVENT_STREAM.test(contentType);

/**
 * Each rule's quantities, made ready with its first response: a rule reads every response of its
 * cost entry, and the plan holding it lives on (null: the rule's pointers cannot be read).
 */
const plans = new WeakMap<SettleRule, QuantityPlan | null>();

function planOf(rule: Exclude<SettleRule, { header: string }>): QuantityPlan | null {
  let plan = plans.get(rule);
  if (plan === undefined) {
    const quantities = quantitiesOf(rule);
    plan = quantities === undefined ? null : new QuantityPlan(quantities);
    plans.set(rule, plan);
  }
  return plan;
}

/** The response headers `openMeter` reads for a rule that reads the body (`json`, `preset`). */
export const BODY_RULE_HEADERS: readonly string[] = [CONTENT_TYPE];

/** The response headers `openMeter` reads for `rule`, in lower case: a caller may pass only those. */
export const headersRead = (rule: SettleRule): readonly string[] =>
  'header' in rule ? [CONTENT_TYPE, rule.header.toLowerCase()] : BODY_RULE_HEADERS;

/**
 * The meter for one response, chosen from the rule and the response's headers: the header, the events
 * of a `text/event-stream`, or a JSON body. Undefined when the rule cannot be read (its pointers).
 */
export function openMeter(
  rule: SettleRule,
  headers: HeaderBag,
  bounds: MeterBounds = METER_BOUNDS_DEFAULT,
): UnitMeter | undefined {
  if ('header' in rule) return new HeaderMeter(rule.header, headers, bounds.settleMax);
  const plan = planOf(rule);
  if (plan === null) return undefined;
  return isEventStream(headers[CONTENT_TYPE]) ? new SseMeter(plan, bounds) : new JsonBodyMeter(plan, bounds);
}
