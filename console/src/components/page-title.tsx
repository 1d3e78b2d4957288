/** A page's heading (where focus lands on navigation) and the browser tab's title. */
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';

export function PageTitle({ title, children }: { title: string; children?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Tollgate console`;
  }, [title]);
  return (
    <div class="page-title">
      <h1 tabIndex={-1}>{title}</h1>
      {children && <div class="page-actions">{children}</div>}
    </div>
  );
}
