/**
 * Suggestions for a field that takes an id (`<input list=…>`): the plans or consumers there are, so an
 * id is picked rather than typed from memory. The field still takes any id: without the scope to list
 * them, or past the first 1,000, it is typed, and the API says if it names nothing.
 */
import { api, ok } from '../api';
import { useApi } from '../use-api';

const LISTED = 1000;

export function PlanOptions({ id }: { id: string }) {
  const plans = useApi(
    (signal) =>
      ok(api.GET('/rate-limit', { params: { query: { limit: LISTED } }, signal })).catch(() => undefined),
    [],
  );
  return (
    <datalist id={id}>
      {(plans.data?.rateLimits ?? []).map((p) => (
        <option key={p.rateLimitId} value={p.rateLimitId}>
          {p.description}
        </option>
      ))}
    </datalist>
  );
}

export function ConsumerOptions({ id }: { id: string }) {
  const consumers = useApi(
    (signal) =>
      ok(api.GET('/tollgate/consumers', { params: { query: { limit: LISTED } }, signal })).catch(
        () => undefined,
      ),
    [],
  );
  return (
    <datalist id={id}>
      {(consumers.data?.consumers ?? []).map((c) => (
        <option key={c.consumerId} value={c.consumerId}>
          {c.externalId === null ? c.name : `${c.name} (${c.externalId})`}
        </option>
      ))}
    </datalist>
  );
}
