/**
 * What a key or consumer was charged, in its plan's unit (a plan's `unit`: `requests` unless it counts
 * tokens or the like, docs/guides/usage-priced-apis.md), and the requests whose response reported
 * nothing readable, which kept their reservation as their cost. The console's details and the portal's
 * usage say it alike.
 */
import { api, ok } from '../api';
import { formatNumber } from '../format';
import { useApi } from '../use-api';

/** A plan's unit; without a plan (or before it is read): requests. */
export const unitOf = (plan: { readonly unit?: string } | null | undefined): string =>
  plan?.unit ?? 'requests';

/** "2 requests reported nothing readable and kept their reservation". */
export function unsettledText(unsettled: number): string {
  const one = unsettled === 1;
  return `${formatNumber(unsettled)} ${one ? 'request' : 'requests'} reported nothing readable and kept ${one ? 'its' : 'their'} reservation`;
}

export function ChargedUsage({ cost, unsettled, unit }: { cost: number; unsettled: number; unit: string }) {
  return (
    <span class="charged-usage">
      {formatNumber(cost)} {unit}
      {unsettled > 0 && <span class="muted"> ({unsettledText(unsettled)})</span>}
    </span>
  );
}

/** The plan `planId` names (null: none), read once per id; undefined while it is read or when it cannot be. */
export function usePlan(planId: string | null) {
  return useApi(
    (signal) =>
      planId === null
        ? Promise.resolve(undefined)
        : ok(
            api.GET('/rate-limit/{rateLimitId}', { params: { path: { rateLimitId: planId } }, signal }),
          ).catch(() => undefined),
    [planId],
  );
}
