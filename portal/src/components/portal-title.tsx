/** A portal page's heading and tab title, after the team's portal title. */
import type { ComponentChildren } from 'preact';
import { PageTitle } from '../../../console/src/components/page-title';
import { usePortal } from '../portal-context';

export function PortalTitle({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <PageTitle title={title} site={usePortal().branding.title}>
      {children}
    </PageTitle>
  );
}
