/** An API error as an administrator reads it: what went wrong and what to do, once, in plain words. */
import type { ApiError } from '../api';
import { describeDetail, plainMessage } from '../plain-errors';

export function ErrorMessage({ error }: { error: ApiError | undefined }) {
  if (!error) return null;
  const details = error.code === 'validation_failed' ? (error.details ?? []) : [];
  return (
    <div class="error" role="alert">
      <p>{plainMessage(error)}</p>
      {details.length > 0 && (
        <ul>
          {details.map((d) => (
            <li key={d.field + d.message}>{describeDetail(d)}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
