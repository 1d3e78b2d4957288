/**
 * What one billing export run did, send by send: the customer billed, the subject and bucket counted,
 * the units and the receiver's answer, and the subjects it skipped for want of a customer id. A run
 * whose counts look fine can still have left usage unbilled: the skipped list is what shows it.
 */
import { formatNumber, formatTime } from '../format';
import { href } from '../route';
import type { components } from '../api-types';

type Run = components['schemas']['BillingExportRun'];
type Subject = 'key' | 'consumer';

/** The Problem column: the run's own failure, a run cut short, or what it had to leave out. */
export function runProblem(run: Run, subject: Subject): string {
  if (run.error !== null) return run.error;
  if (run.finishedAt === null) return 'stopped mid-run: its sends are retried';
  const skipped = run.skippedSubjects.length;
  if (skipped > 0) {
    const noun =
      subject === 'key' ? (skipped === 1 ? 'key' : 'keys') : skipped === 1 ? 'consumer' : 'consumers';
    const atLeast = skipped >= 100 ? 'at least ' : '';
    return `${atLeast}${formatNumber(skipped)} ${noun} with usage skipped: no customer id`;
  }
  return run.failed > 0 ? `${formatNumber(run.failed)} sends failed: retried` : '—';
}

function SubjectLink({ id, subject }: { id: string; subject: Subject }) {
  return (
    <a class="mono" href={href(subject === 'key' ? 'keys' : 'consumers', id)}>
      {id}
    </a>
  );
}

export function BillingRunDetails({
  run,
  subject,
  customerField,
}: {
  run: Run;
  subject: Subject;
  customerField: string | null;
}) {
  if (run.sends.length === 0 && run.skippedSubjects.length === 0) return <span class="muted">nothing</span>;
  return (
    <details class="run-details">
      <summary>
        {formatNumber(run.sends.length)} {run.sends.length === 1 ? 'send' : 'sends'}
        {run.skippedSubjects.length > 0 && `, ${formatNumber(run.skippedSubjects.length)} skipped`}
      </summary>
      {run.sends.length > 0 && (
        <table class="data">
          <caption>Sends of the run started {formatTime(run.startedAt)}</caption>
          <thead>
            <tr>
              <th scope="col">Customer</th>
              <th scope="col">{subject === 'key' ? 'Key' : 'Consumer'}</th>
              <th scope="col">Bucket</th>
              <th scope="col" class="num">
                Units
              </th>
              <th scope="col">Answer</th>
            </tr>
          </thead>
          <tbody>
            {run.sends.map((s) => (
              <tr key={s.idempotencyId + s.revision} data-send-id={s.idempotencyId}>
                <td data-label="Customer">{s.customer}</td>
                <td data-label={subject === 'key' ? 'Key' : 'Consumer'}>
                  <SubjectLink id={s.subject} subject={subject} />
                </td>
                <td data-label="Bucket">
                  {formatTime(s.bucketStart)}
                  {s.revision > 1 && ` (correction ${s.revision - 1})`}
                </td>
                <td class="num" data-label="Units">
                  {formatNumber(s.value)}
                </td>
                <td data-label="Answer">
                  {s.delivered ? 'delivered' : 'failed'}
                  {s.status !== null ? ` (${s.status})` : ' (no answer)'}
                  {s.error !== null && `: ${s.error}`}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {run.skippedSubjects.length > 0 && (
        <>
          <p>
            Skipped, with usage but no customer id (
            {customerField === null ? 'no external id' : `no metadata member ${customerField}`}): their usage
            is kept, and sent once they have one
            {run.skippedSubjects.length >= 100 ? '; the first 100 are listed' : ''}.
          </p>
          <ul class="skipped-subjects" aria-label="Skipped">
            {run.skippedSubjects.map((id) => (
              <li key={id}>
                <SubjectLink id={id} subject={subject} />
              </li>
            ))}
          </ul>
        </>
      )}
    </details>
  );
}
