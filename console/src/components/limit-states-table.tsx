/**
 * Limits as usage.rateLimits reports them: what each allows, what is left of it now and when its window
 * resets. A limit counted for each visitor has no one count to show; a concurrency limit has no period
 * and no reset. Shown by the console's key and consumer pages and by the portal's plan page.
 */
import { formatNumber, formatTime } from '../format';
import { eachVisitor } from '../plans';
import type { LimitState } from '../types';

const ALGORITHM_NOTES: Record<string, string> = {
  sliding: ' (sliding)',
  tokenBucket: ' (token bucket)',
  concurrency: 'in flight',
};

export function LimitStatesTable({
  states,
  caption,
  algorithmOf,
  showWhose = false,
}: {
  states: readonly LimitState[];
  /** For screen readers, where the heading above does not say it. */
  caption?: string;
  /** The limit's algorithm, where the page knows the plan (the states do not carry it). */
  algorithmOf?: (name: string) => string | undefined;
  /** A column saying whether each limit is the consumer's (shared by its keys) or a key's. */
  showWhose?: boolean;
}) {
  return (
    <table class="data">
      {caption && <caption class="visually-hidden">{caption}</caption>}
      <thead>
        <tr>
          <th scope="col">Limit</th>
          {showWhose && <th scope="col">Whose</th>}
          <th scope="col" class="num">
            Allowed
          </th>
          <th scope="col">Per</th>
          <th scope="col" class="num">
            Left now
          </th>
          <th scope="col">Resets at</th>
        </tr>
      </thead>
      <tbody>
        {states.map((s) => (
          <tr key={s.name}>
            <td data-label="Limit">{s.name}</td>
            {showWhose && (
              <td data-label="Whose">{s.scope === 'consumer' ? 'the consumer (all its keys)' : 'a key'}</td>
            )}
            <td class="num" data-label="Allowed">
              {formatNumber(s.limit)}
            </td>
            <td data-label="Per">
              {`${s.period ?? ''}${ALGORITHM_NOTES[algorithmOf?.(s.name) ?? ''] ?? ''}` || '—'}
            </td>
            <td class="num" data-label="Left now">
              {s.remaining === null ? (
                eachVisitor(s.per)
              ) : (
                <>
                  {formatNumber(s.remaining)}
                  <meter
                    class="left"
                    min={0}
                    max={s.limit}
                    value={s.remaining}
                    aria-label={`${s.name}: ${formatNumber(s.remaining)} of ${formatNumber(s.limit)} left`}
                  />
                </>
              )}
            </td>
            <td data-label="Resets at">
              {s.resetTime === null ? '—' : <time dateTime={s.resetTime}>{formatTime(s.resetTime)}</time>}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
