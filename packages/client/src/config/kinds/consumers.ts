/**
 * Consumers, identified by `externalId` (one without it cannot be named by a file and is left alone).
 * Declared `credits` set the balance's refill and `lowAt`; `remaining` only when the balance is created,
 * so an apply never gives back what was spent. Absent `credits` leave the balance as it is; null removes it.
 */
import type { components } from '../../generated/management-api.js';
import { answerOf, everyPage } from '../api-call.js';
import type { ConsumerItem } from '../config-file.js';
import type { Kind } from '../kind.js';
import { canonicalText, changedSettings } from '../settings.js';

type Consumer = components['schemas']['Consumer'];
type Credits = NonNullable<Consumer['credits']>;
type Refill = NonNullable<Credits['refill']>;

/** A refill as the service shows it: a monthly one on its day (default the 1st). */
const refillOf = (refill: Refill | null | undefined): Refill | null =>
  refill ? { ...refill, ...(refill.interval === 'month' && { dayOfMonth: refill.dayOfMonth ?? 1 }) } : null;

/**
 * The credits an update sends: the declared refill and `lowAt`, without `remaining`, so the balance goes
 * on counting: what is spent between reading it and the change stays spent, and a retried apply
 * changes nothing more.
 */
function creditsChange(declared: ConsumerItem['credits'], actual: Consumer['credits']): unknown {
  if (declared === undefined) return undefined;
  if (declared === null) return actual === null ? undefined : null;
  if (actual === null) return declared;
  const wanted = { refill: refillOf(declared.refill), lowAt: declared.lowAt ?? null };
  const held = { refill: refillOf(actual.refill), lowAt: actual.lowAt };
  return canonicalText(wanted) === canonicalText(held) ? undefined : wanted;
}

export const consumers: Kind<ConsumerItem, Consumer> = {
  section: 'consumers',
  noun: 'consumer',
  list: (client) =>
    everyPage(async (cursor) => {
      const page = await answerOf(
        client.GET('/tollgate/consumers', { params: { query: { limit: 1000, cursor } } }),
      );
      return { items: page.consumers, nextCursor: page.nextCursor };
    }),
  identityOfItem: (item) => item.externalId,
  identityOf: (consumer) => consumer.externalId ?? undefined,
  differences(item, consumer) {
    const credits = creditsChange(item.credits, consumer.credits);
    return {
      ...changedSettings(
        { name: item.name, metadata: item.metadata ?? {}, rateLimitId: item.rateLimitId ?? null },
        consumer,
      ),
      ...(credits !== undefined && { credits }),
    };
  },
  async create(client, item) {
    await answerOf(client.POST('/tollgate/consumers', { body: item }));
  },
  async update(client, consumer, patch) {
    await answerOf(
      client.PATCH('/tollgate/consumers/{consumerId}', {
        params: { path: { consumerId: consumer.consumerId } },
        body: patch,
      }),
    );
  },
  async remove(client, consumer, force) {
    await answerOf(
      client.DELETE('/tollgate/consumers/{consumerId}', {
        params: { path: { consumerId: consumer.consumerId }, query: force ? { force: true } : {} },
      }),
    );
  },
  inUse: (consumer) => (consumer.keyCount > 0 ? `${consumer.keyCount} key(s) belong to it` : undefined),
  exported: (consumer) => ({
    name: consumer.name,
    externalId: consumer.externalId!,
    ...(Object.keys(consumer.metadata).length > 0 && { metadata: consumer.metadata }),
    ...(consumer.rateLimitId !== null && { rateLimitId: consumer.rateLimitId }),
    ...(consumer.credits !== null && { credits: consumer.credits }),
  }),
};
