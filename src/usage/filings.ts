import { mergeFiledUsage } from './merge-usage.js';
import { emptyFiledUsage, subtractCounts, type FiledUsage, type KeyUsage } from './usage.js';

/** Part of a key's usage and the consumer it is filed under (null: none). */
export interface Filing {
  readonly consumerId: string | null;
  readonly usage: FiledUsage;
}

/**
 * A key's usage by the consumer it is filed under: each consumer's part as it came, and the rest
 * (the whole less every part) under none. The rest is usage made while the key belonged to no
 * consumer, or counted by a version that knows no consumers (decision record 0026).
 */
export function filingsOf(usage: KeyUsage): Filing[] {
  if (usage.consumers.size === 0) return [{ consumerId: null, usage }];
  const rest = emptyFiledUsage();
  mergeFiledUsage(rest, usage, false);
  for (const part of usage.consumers.values()) subtractFiled(rest, part);
  const filings: Filing[] = [...usage.consumers].map(([consumerId, part]) => ({ consumerId, usage: part }));
  if (rest.endpoints.size + rest.customers.size + rest.minutes.size + rest.days.size > 0)
    filings.push({ consumerId: null, usage: rest });
  return filings;
}

/** Takes `part` out of `from`, entry by entry; entries left without requests go. */
function subtractFiled(from: FiledUsage, part: FiledUsage): void {
  subtractEntries(from.endpoints, part.endpoints);
  subtractEntries(from.customers, part.customers);
  subtractEntries(from.minutes, part.minutes);
  for (const [day, d] of part.days) {
    const held = from.days.get(day);
    if (held === undefined) continue;
    subtractEntries(held.endpoints, d.endpoints);
    subtractEntries(held.customers, d.customers);
    subtractEntries(held.routes, d.routes);
    if (held.endpoints.size + held.customers.size + held.routes.size === 0) from.days.delete(day);
  }
}

function subtractEntries<K, T extends Parameters<typeof subtractCounts>[0]>(
  from: Map<K, T>,
  part: ReadonlyMap<K, T>,
): void {
  for (const [name, counts] of part) {
    const held = from.get(name);
    if (held === undefined) continue;
    subtractCounts(held, counts);
    if (held.requests <= 0) from.delete(name);
  }
}
