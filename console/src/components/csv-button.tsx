/** Downloads what a usage chart shows (the same range and granularity) as the API's CSV. */
import type { Query } from '../api';
import { downloadCsv } from '../download';
import { useAction } from '../use-api';
import { ErrorMessage } from './error-message';

export function CsvButton({
  path,
  query,
  name,
}: {
  path: string;
  query: Query & { from: string; to: string };
  /** The file's name before its range: `usage-key_…`. */
  name: string;
}) {
  const action = useAction();
  return (
    <>
      <button
        type="button"
        class="secondary"
        disabled={action.busy}
        onClick={() => void action.run(() => downloadCsv(path, query, name))}
      >
        Download CSV
      </button>
      <ErrorMessage error={action.error} />
    </>
  );
}
