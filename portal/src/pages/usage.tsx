/** The consumer's usage, all its keys together. */
import type { Route } from '../../../console/src/route';
import { PortalTitle } from '../components/portal-title';
import { PortalUsage } from '../components/portal-usage';

export function UsagePage({ route }: { route: Route }) {
  return (
    <>
      <PortalTitle title="Usage" />
      <PortalUsage
        route={route}
        segments={['usage']}
        path="/usage"
        subject="All your keys"
        fileName="usage"
      />
    </>
  );
}
