/** Top-ups and sets of a key's or a consumer's prepaid balance (docs/guides/credits.md). */
import { AppError } from '../../../errors.js';
import type { KeyChange } from '../../../keys/key-events.js';
import { balanceSet, balanceToppedUp, type Balance } from '../../../plans/balance.js';
import type { Scope, Subject } from '../../../plans/subject.js';
import type { ConsumerRow } from '../../../store/consumer-repository.js';
import type { KeyRow } from '../../../store/key-row.js';
import { consumerAudit, keyAudit } from '../../audit-views.js';
import type { ManagementContext, Repositories } from '../../context.js';
import { CreditsChangeRequest, CreditsChangeResponse, creditsChangeShape } from './schemas.js';
import type { Credits } from './balance-schemas.js';
import { consumerSubjects, creditsView, heldCredits, syncCredits } from './views.js';
import { defineOperation } from '../../operation.js';
import { keySubjects } from '../plans/rate-limit-views.js';
import { invalid } from '../../validation.js';

type HolderRow = KeyRow | ConsumerRow;

/** What the call does with each kind of holder: find it, show it, and tell the replicas of it. */
interface HolderKind {
  /** The id's name in the body and the answer. */
  readonly idField: 'consumerApiKeyId' | 'consumerId';
  readonly notFound: 'key_not_found' | 'consumer_not_found';
  /** The holder, held for update inside a transaction when `repositories` are the transaction's. */
  read(
    repositories: Pick<Repositories, 'keys' | 'consumers'>,
    id: string,
    lock: boolean,
  ): Promise<HolderRow | undefined>;
  audit(row: HolderRow): Record<string, unknown>;
  /** The decision its balance is counted in (where the limiter keeps it). */
  subjects(row: HolderRow, ctx: ManagementContext): Promise<readonly Subject[] | undefined>;
  change(id: string): KeyChange;
}

const HOLDERS: Record<Scope, HolderKind> = {
  key: {
    idField: 'consumerApiKeyId',
    notFound: 'key_not_found',
    read: ({ keys }, id, lock) => keys.get(id, lock),
    audit: (row) => keyAudit(row as KeyRow),
    subjects: (row, ctx) => keySubjects(row as KeyRow, ctx),
    change: (keyId) => ({ kind: 'key', keyId }),
  },
  consumer: {
    idField: 'consumerId',
    notFound: 'consumer_not_found',
    read: ({ consumers }, id, lock) => consumers.get(id, lock ? 'update' : undefined),
    audit: (row) => consumerAudit(row as ConsumerRow),
    subjects: (row) => Promise.resolve(consumerSubjects(row as ConsumerRow)),
    change: (consumerId) => ({ kind: 'consumer', consumerId }),
  },
};

const MAX_UNITS = Number.MAX_SAFE_INTEGER;

export const creditOperations = [
  defineOperation({
    id: 'changeCredits',
    method: 'post',
    path: '/tollgate/credits',
    scope: 'keys:write',
    tag: 'Credits',
    summary: "Top up or set a key's or a consumer's credit balance",
    description:
      '`add` tops the balance up: what it holds rises by `add`, its refill and `lowAt` stay (a refill still sets it back to the refill amount). `set` sets what it holds, counted afresh, keeping its refill and `lowAt`. A key or consumer without a balance gets one, with no refill. Atomic with every request that spends the balance, and in force for the next request on every replica. The answer is what the balance holds right after the change.',
    body: { schema: CreditsChangeRequest, required: creditsChangeShape },
    success: { status: 200, description: 'What the balance now holds', schema: CreditsChangeResponse },
    errors: {
      key_not_found: '`consumerApiKeyId` names no key',
      consumer_not_found: '`consumerId` names no consumer',
    },
    async handle({ body, res, ctx }) {
      const scope: Scope = body.consumerApiKeyId !== undefined ? 'key' : 'consumer';
      const id = body.consumerApiKeyId ?? body.consumerId!;
      const kind = HOLDERS[scope];
      // What the balance held, for the audit entry: read before the change (the limiter is not in the transaction).
      const current = await kind.read(ctx, id, false);
      if (!current) throw new AppError(kind.notFound);
      const held = await heldCredits(ctx, await kind.subjects(current, ctx), scope);
      const holder = await ctx.audited(res, async (repositories) => {
        const before = await kind.read(repositories, id, true);
        if (!before) throw new AppError(kind.notFound);
        const now = ctx.now();
        const balance = changedBalance(before, body, held?.remaining ?? 0, now.getTime());
        await repositories.credits.set(scope, id, balance, balance.epoch, now);
        const after = (await kind.read(repositories, id, false))!;
        const creditsAfter: Credits = creditsView(balance, body.set ?? (held?.remaining ?? 0) + body.add!);
        return {
          result: after,
          action: `${scope}.credits_${body.set === undefined ? 'add' : 'set'}`,
          target: { type: scope, id },
          before: { ...kind.audit(before), credits: held },
          after: { ...kind.audit(after), credits: creditsAfter },
        };
      });
      await ctx.announce(kind.change(id));
      const subjects = await kind.subjects(holder, ctx);
      await syncCredits(ctx, subjects);
      const remaining = (await heldCredits(ctx, subjects, scope))!.remaining;
      const answer = { [kind.idField]: id, remaining } as CreditsChangeResponse;
      res.json(answer);
    },
  }),
];

/**
 * The balance a holder that holds `remaining` has after `add` or `set` at `nowMs`; 400 naming `add`
 * when it would hold more than 2^53-1 units. A top-up counts against what remains, not against what
 * the period granted: one that would take the grant past 2^53-1 (where it could no longer be counted
 * exactly) starts the period afresh at what it then holds, as a set does (docs/decisions/0061).
 */
function changedBalance(
  holder: HolderRow,
  change: Pick<CreditsChangeRequest, 'add' | 'set'>,
  remaining: number,
  nowMs: number,
): Balance {
  const balance = holder.balance;
  const set = (units: number) =>
    balanceSet(holder.creditsEpoch, units, balance?.refill ?? null, balance?.lowAt ?? null, nowMs);
  if (change.set !== undefined) return set(change.set);
  const add = change.add!;
  if (remaining + add > MAX_UNITS)
    throw invalid([{ field: 'add', message: `would take the balance beyond ${MAX_UNITS} units` }]);
  const topped = balanceToppedUp(balance, holder.creditsEpoch, add, nowMs);
  return topped.granted > MAX_UNITS ? set(remaining + add) : topped;
}
