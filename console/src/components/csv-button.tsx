/** Downloads what a list or a usage chart shows (the same range and granularity) as the API's CSV. */
import { ScopedButton } from '../access';
import { saveCsv } from '../download';
import { useAction } from '../use-api';
import { ErrorMessage } from './error-message';

export function CsvButton({
  load,
  range,
  name,
}: {
  /** The API's CSV of the range (a call with `AS_CSV`). */
  load: () => Promise<Blob>;
  /** A usage chart's range, which the file's name carries. */
  range?: { from: string; to: string };
  /** The file's name before its range: `usage-key_…`. */
  name: string;
}) {
  const action = useAction();
  return (
    <>
      <ScopedButton
        scope="usage:read"
        class="secondary"
        disabled={action.busy}
        onClick={() =>
          void action.run(async () => {
            saveCsv(await load(), name, range);
          })
        }
      >
        Download CSV
      </ScopedButton>
      <ErrorMessage error={action.error} />
    </>
  );
}
