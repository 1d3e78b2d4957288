/**
 * What a key without a balance of its own is charged: nothing, or its consumer's balance, which every
 * key of the consumer spends (docs/guides/credits.md). The consumer is read to say which.
 */
import { api, ok } from '../api';
import { formatNumber } from '../format';
import { href } from '../route';
import { useApi } from '../use-api';

export function KeyWithoutBalance({ consumerId }: { consumerId: string | null }) {
  const consumer = useApi(
    (signal) =>
      consumerId === null
        ? Promise.resolve(undefined)
        : ok(api.GET('/tollgate/consumers/{consumerId}', { params: { path: { consumerId } }, signal })),
    [consumerId],
  );
  if (consumerId === null) return <p>No prepaid balance: requests are not charged credits.</p>;
  const link = <a href={href('consumers', consumerId)}>{consumer.data?.name ?? consumerId}</a>;
  if (consumer.error)
    return (
      <p>
        No balance of its own. Its consumer {link}’s balance, if it has one, is charged for its requests and
        shows on the consumer’s page.
      </p>
    );
  if (!consumer.data) return <p>No balance of its own.</p>;
  if (consumer.data.credits === null)
    return <p>No prepaid balance, its own or its consumer {link}’s: requests are not charged credits.</p>;
  return (
    <p>
      No balance of its own: its requests spend its consumer {link}’s balance,{' '}
      {formatNumber(consumer.data.credits.remaining)} credits now.
    </p>
  );
}
