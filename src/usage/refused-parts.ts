/**
 * A usage batch the database refused, cut into parts it can take or refuse one by one (decision
 * record 0207): a refused value then holds back only its own rows, never the usage handed over with it.
 */
import { requestsOf, type FiledUsage, type KeyUsage, type UsageBatch } from './usage.js';

/**
 * One batch per key; a batch of one key, its counts (totals, minutes, days, failure log: everything
 * but its customers) and one batch per customer of it. A batch that is one such part already comes
 * back alone: it is what the database refuses.
 */
export function partsOf(batch: UsageBatch): UsageBatch[] {
  if (batch.size !== 1) return [...batch].map(([keyId, usage]) => new Map([[keyId, usage]]));
  const [[keyId, usage]] = [...batch] as [[string, KeyUsage]];
  const counts: KeyUsage = {
    ...withoutCustomers(usage),
    consumers: new Map([...usage.consumers].map(([id, part]) => [id, withoutCustomers(part)])),
    failures: usage.failures,
  };
  const parts = [...usage.customers.keys()].map((customer) => customerPart(usage, customer));
  if (counts.endpoints.size + counts.minutes.size + counts.days.size > 0 || counts.failures !== undefined)
    parts.unshift(counts);
  return parts.map((part) => new Map([[keyId, part]]));
}

/** Requests a held batch still has rows of: a customer's part counts its customer's requests. */
export function requestsHeldIn(batch: UsageBatch): number {
  let n = 0;
  for (const usage of batch.values()) n += requestsHeld(usage);
  return n;
}

/** `requestsHeldIn` for one key's usage. */
export function requestsHeld(usage: FiledUsage): number {
  let customers = 0;
  for (const c of usage.customers.values()) customers += c.requests;
  return Math.max(requestsOf(usage), customers);
}

/** Only `customer`'s rows of a key's usage, in the whole and in each consumer's part that has it. */
function customerPart(usage: KeyUsage, customer: string): KeyUsage {
  const consumers = new Map<string, FiledUsage>();
  for (const [id, part] of usage.consumers)
    if (part.customers.has(customer)) consumers.set(id, onlyCustomer(part, customer));
  return { ...onlyCustomer(usage, customer), consumers };
}

/** A customer's totals and days of `usage`, nothing else. */
function onlyCustomer(usage: FiledUsage, customer: string): FiledUsage {
  const days: FiledUsage['days'] = new Map();
  for (const [day, d] of usage.days) {
    const counts = d.customers.get(customer);
    if (counts !== undefined)
      days.set(day, { endpoints: new Map(), customers: new Map([[customer, counts]]), routes: new Map() });
  }
  const counts = usage.customers.get(customer);
  return {
    endpoints: new Map(),
    customers: new Map(counts === undefined ? [] : [[customer, counts]]),
    minutes: new Map(),
    days,
  };
}

/** `usage` as it is, without its customers. */
function withoutCustomers(usage: FiledUsage): FiledUsage {
  const days: FiledUsage['days'] = new Map();
  for (const [day, d] of usage.days)
    if (d.endpoints.size + d.routes.size > 0) days.set(day, { ...d, customers: new Map() });
  return { ...usage, customers: new Map(), days };
}
