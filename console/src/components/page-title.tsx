/** A page's heading (where focus lands on navigation) and the browser tab's title, after the site's. */
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';

export function PageTitle({
  title,
  site = 'Tollgate console',
  children,
}: {
  title: string;
  /** What the tab names after the page: the console, or the team's portal. */
  site?: string;
  children?: ComponentChildren;
}) {
  useEffect(() => {
    document.title = `${title} · ${site}`;
  }, [title, site]);
  return (
    <div class="page-title">
      <h1 tabIndex={-1}>{title}</h1>
      {children && <div class="page-actions">{children}</div>}
    </div>
  );
}
