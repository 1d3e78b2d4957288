/**
 * A key's or a consumer's prepaid balance (docs/guides/credits.md): what it holds and how it refills, and
 * what an administrator does to it: top it up or set it (`POST /tollgate/credits`), set it afresh with
 * its refill (PATCH `credits`), or remove it (PATCH `credits: null`). Every action needs keys:write;
 * each amount is checked before anything is sent.
 */
import { useState } from 'preact/hooks';
import { ScopedButton } from '../access';
import { api, ok } from '../api';
import { MAX_CREDITS, parseCredits, refillText } from '../credits';
import { formatNumber } from '../format';
import type { components } from '../api-types';
import type { Credits } from '../types';
import { useAction } from '../use-api';
import { Dialog, DialogButtons } from './dialog';
import { KeyWithoutBalance } from './key-without-balance';

/** Whose balance: a key's own, or a consumer's (which every key of it spends). */
export type CreditHolder =
  | { readonly kind: 'key'; readonly id: string; readonly consumerId: string | null }
  | { readonly kind: 'consumer'; readonly id: string };

type CreditsInput = components['schemas']['UpdateKeyRequest']['credits'];

type Open = 'top-up' | 'refill' | 'remove' | null;

interface DialogProps {
  readonly holder: CreditHolder;
  readonly credits: Credits | null;
  readonly onDone: (message: string) => void;
  readonly onClose: () => void;
}

/** `POST /tollgate/credits` for this holder. */
const changeCredits = (holder: CreditHolder, change: { add: number } | { set: number }) =>
  ok(
    api.POST('/tollgate/credits', {
      body:
        holder.kind === 'key'
          ? { consumerApiKeyId: holder.id, ...change }
          : { consumerId: holder.id, ...change },
    }),
  );

/** PATCH of the holder's `credits` alone; the page reloads the holder after it. */
const patchCredits = (holder: CreditHolder, credits: CreditsInput): Promise<unknown> =>
  holder.kind === 'key'
    ? ok(
        api.PATCH('/consumer-api-key/{consumerApiKeyId}', {
          params: { path: { consumerApiKeyId: holder.id } },
          body: { credits },
        }),
      )
    : ok(
        api.PATCH('/tollgate/consumers/{consumerId}', {
          params: { path: { consumerId: holder.id } },
          body: { credits },
        }),
      );

/** A whole number typed in a text field (so that `1.5` and `-3` reach the console's own check, in words). */
function CountField({
  id,
  label,
  value,
  onInput,
  problem,
  help,
  autofocus,
}: {
  id: string;
  label: string;
  value: string;
  onInput: (value: string) => void;
  problem: string | undefined;
  help?: string;
  autofocus?: boolean;
}) {
  const described = [help && `${id}-help`, problem && `${id}-problem`].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        inputMode="numeric"
        autocomplete="off"
        autofocus={autofocus}
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
        aria-invalid={problem ? true : undefined}
        aria-describedby={described || undefined}
      />
      {help && (
        <p id={`${id}-help`} class="help">
          {help}
        </p>
      )}
      {problem && (
        <p id={`${id}-problem`} class="error" role="alert">
          {problem}
        </p>
      )}
    </div>
  );
}

/** One choice of a few, as radio buttons under a legend. */
function RadioFieldset<T extends string>({
  legend,
  name,
  options,
  value,
  onChange,
}: {
  legend: string;
  name: string;
  options: readonly (readonly [T, string])[];
  value: T;
  onChange: (value: T) => void;
}) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {options.map(([option, label]) => (
        <label key={option} class="radio">
          <input
            type="radio"
            name={name}
            value={option}
            checked={value === option}
            onChange={() => onChange(option)}
          />
          {label}
        </label>
      ))}
    </fieldset>
  );
}

function TopUpDialog({ holder, credits, onDone, onClose }: DialogProps) {
  const [mode, setMode] = useState<'add' | 'set'>('add');
  const [amount, setAmount] = useState('');
  const [problem, setProblem] = useState<string>();
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const parsed = parseCredits(amount, 'the amount', mode === 'add' ? 1 : 0);
    setProblem(parsed.problem);
    if (parsed.value === undefined) return;
    const value = parsed.value;
    const result = await action.run(() =>
      changeCredits(holder, mode === 'add' ? { add: value } : { set: value }),
    );
    if (result)
      onDone(
        mode === 'add'
          ? `Added ${formatNumber(value)} credits: the balance holds ${formatNumber(result.remaining)} now.`
          : `The balance is set to ${formatNumber(result.remaining)} credits.`,
      );
  };
  return (
    <Dialog open title="Top up or set the balance" onClose={onClose}>
      <form method="dialog" onSubmit={submit} noValidate>
        <p>
          {credits === null
            ? 'It holds no prepaid balance yet: this gives it one, with no refill.'
            : `It holds ${formatNumber(credits.remaining)} credits now. The change is in force for the next request, on every replica.`}
        </p>
        <RadioFieldset
          legend="Change"
          name="credits-mode"
          options={[
            ['add', 'Add to what it holds'],
            ['set', 'Set to, whatever was spent'],
          ]}
          value={mode}
          onChange={setMode}
        />
        <CountField
          id="credits-amount"
          label="Amount"
          value={amount}
          onInput={setAmount}
          problem={problem}
          help={`A whole number of credits, ${mode === 'add' ? 1 : 0} to ${formatNumber(MAX_CREDITS)}.`}
          autofocus
        />
        <DialogButtons error={action.error} onCancel={onClose}>
          <button type="submit" disabled={action.busy}>
            {mode === 'add' ? 'Add credits' : 'Set balance'}
          </button>
        </DialogButtons>
      </form>
    </Dialog>
  );
}

type RefillKind = 'none' | 'day' | 'month';

function RefillDialog({ holder, credits, onDone, onClose }: DialogProps) {
  const refill = credits?.refill ?? null;
  const [remaining, setRemaining] = useState(credits === null ? '' : String(credits.remaining));
  const [kind, setKind] = useState<RefillKind>(refill?.interval ?? 'none');
  const [amount, setAmount] = useState(refill === null ? '' : String(refill.amount));
  const [day, setDay] = useState(String(refill?.dayOfMonth ?? 1));
  const [lowAt, setLowAt] = useState(credits?.lowAt == null ? '' : String(credits.lowAt));
  const [problems, setProblems] = useState<{
    remaining?: string;
    amount?: string;
    day?: string;
    lowAt?: string;
  }>({});
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const balance = parseCredits(remaining, 'the balance');
    const refillAmount = kind === 'none' ? undefined : parseCredits(amount, 'the refill amount');
    const dayOfMonth = Number(day.trim());
    const dayProblem =
      kind === 'month' && !(/^\d{1,2}$/.test(day.trim()) && dayOfMonth >= 1 && dayOfMonth <= 31)
        ? 'The day of the month must be a whole number from 1 to 31.'
        : undefined;
    const alertBelow = lowAt.trim() === '' ? undefined : parseCredits(lowAt, 'the alert level');
    setProblems({
      remaining: balance.problem,
      amount: refillAmount?.problem,
      day: dayProblem,
      lowAt: alertBelow?.problem,
    });
    if (
      balance.value === undefined ||
      refillAmount?.problem !== undefined ||
      dayProblem ||
      alertBelow?.problem !== undefined
    )
      return;
    const body: CreditsInput = {
      remaining: balance.value,
      refill:
        kind === 'none'
          ? null
          : kind === 'day'
            ? { amount: refillAmount!.value!, interval: 'day' }
            : { amount: refillAmount!.value!, interval: 'month', dayOfMonth },
      lowAt: alertBelow?.value ?? null,
    };
    const saved = await action.run(() => patchCredits(holder, body));
    if (saved)
      onDone(
        `The balance is set to ${formatNumber(balance.value)} credits. ${refillText(body?.refill ?? null)}.`,
      );
  };
  return (
    <Dialog open title={credits === null ? 'Give a prepaid balance' : 'Balance and refill'} onClose={onClose}>
      <form method="dialog" onSubmit={submit} noValidate>
        <CountField
          id="credits-remaining"
          label="Balance"
          value={remaining}
          onInput={setRemaining}
          problem={problems.remaining}
          help="Saving counts the balance afresh from this number: what was spent since this page was read no longer counts. To add to it, use Top up."
          autofocus
        />
        <RadioFieldset
          legend="Refill, at 00:00 UTC"
          name="credits-refill"
          options={[
            ['none', 'No refill'],
            ['day', 'Every day'],
            ['month', 'Every month'],
          ]}
          value={kind}
          onChange={setKind}
        />
        {kind !== 'none' && (
          <CountField
            id="credits-refill-amount"
            label="Refill to"
            value={amount}
            onInput={setAmount}
            problem={problems.amount}
            help="Each refill sets the balance to this many credits; it does not add up."
          />
        )}
        {kind === 'month' && (
          <CountField
            id="credits-refill-day"
            label="Day of the month"
            value={day}
            onInput={setDay}
            problem={problems.day}
            help="1 to 31; in a shorter month, its last day."
          />
        )}
        <CountField
          id="credits-low-at"
          label="Alert when it falls below (optional)"
          value={lowAt}
          onInput={setLowAt}
          problem={problems.lowAt}
          help="The credits.low webhook event fires when the balance falls below this. Empty: below a tenth of the refill amount (never without a refill)."
        />
        <DialogButtons error={action.error} onCancel={onClose}>
          <button type="submit" disabled={action.busy}>
            Save balance
          </button>
        </DialogButtons>
      </form>
    </Dialog>
  );
}

function RemoveDialog({ holder, credits, onDone, onClose }: DialogProps) {
  const action = useAction();
  const remove = async () => {
    const done = await action.run(() => patchCredits(holder, null));
    if (done) onDone('The prepaid balance is removed: requests are no longer charged credits.');
  };
  return (
    <Dialog open title="Remove the prepaid balance?" onClose={onClose}>
      <p>
        {holder.kind === 'key' ? 'The key’s requests are' : 'The requests of its keys are'} no longer charged
        credits
        {credits === null ? '' : `, and the ${formatNumber(credits.remaining)} credits it holds are gone`}. A
        top-up later gives it a new balance, with no refill.
      </p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void remove()}>
          Remove balance
        </button>
      </DialogButtons>
    </Dialog>
  );
}

export function CreditsPanel({
  holder,
  credits,
  onChanged,
}: {
  holder: CreditHolder;
  credits: Credits | null;
  /** After a change: reload the holder and announce what happened. */
  onChanged: (message: string) => void;
}) {
  const [open, setOpen] = useState<Open>(null);
  const done = (message: string) => {
    setOpen(null);
    onChanged(message);
  };
  const dialogProps = { holder, credits, onDone: done, onClose: () => setOpen(null) };
  return (
    <section aria-labelledby="credits-title">
      <h2 id="credits-title">Credits</h2>
      {credits === null ? (
        holder.kind === 'key' ? (
          <KeyWithoutBalance consumerId={holder.consumerId} />
        ) : (
          <p>No prepaid balance: requests are not charged credits.</p>
        )
      ) : (
        <dl class="details">
          <dt>Balance</dt>
          <dd data-credits-remaining>{formatNumber(credits.remaining)}</dd>
          <dt>Refill</dt>
          <dd>{refillText(credits.refill)}</dd>
          {credits.lowAt !== null && (
            <>
              <dt>Low-balance alert</dt>
              <dd>below {formatNumber(credits.lowAt)} (credits.low)</dd>
            </>
          )}
        </dl>
      )}
      {credits !== null && (
        <p class="help">
          {holder.kind === 'consumer'
            ? 'Every key of the consumer spends this balance.'
            : holder.consumerId === null
              ? 'The key’s own balance.'
              : 'The key’s own balance; its consumer’s, if it has one, is spent too and shows on the consumer’s page.'}
        </p>
      )}
      <div class="toolbar" role="toolbar" aria-label="Credit actions">
        <ScopedButton scope="keys:write" class="secondary" onClick={() => setOpen('top-up')}>
          Top up…
        </ScopedButton>
        <ScopedButton scope="keys:write" class="secondary" onClick={() => setOpen('refill')}>
          {credits === null ? 'Give a balance…' : 'Balance and refill…'}
        </ScopedButton>
        {credits !== null && (
          <ScopedButton scope="keys:write" class="danger" onClick={() => setOpen('remove')}>
            Remove balance…
          </ScopedButton>
        )}
      </div>
      {open === 'top-up' && <TopUpDialog {...dialogProps} />}
      {open === 'refill' && <RefillDialog {...dialogProps} />}
      {open === 'remove' && <RemoveDialog {...dialogProps} />}
    </section>
  );
}
