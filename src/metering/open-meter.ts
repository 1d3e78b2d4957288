import { HeaderMeter } from './header-meter.js';
import { JsonBodyMeter } from './json-body-meter.js';
import { METER_BOUNDS_DEFAULT, type MeterBounds } from './meter-bounds.js';
import { quantitiesOf, type SettleRule } from './settle-rule.js';
import { SseMeter } from './sse-meter.js';
import type { HeaderBag, UnitMeter } from './unit-meter.js';

const isEventStream = (contentType: string | string[] | undefined) =>
  typeof contentType === 'string' && contentType.split(';')[0]!.trim().toLowerCase() === 'text/event-stream';

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
  const quantities = quantitiesOf(rule);
  if (!quantities) return undefined;
  return isEventStream(headers['content-type'])
    ? new SseMeter(quantities, bounds)
    : new JsonBodyMeter(quantities, bounds);
}
