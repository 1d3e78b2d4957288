/**
 * A prepaid balance as the management API takes it (create and PATCH of keys and consumers) and shows
 * it (docs/guides/credits.md). The key and consumer schemas put these on keys and consumers.
 */
import { Type, type Static } from '@sinclair/typebox';
import { REFILL_INTERVALS, type RefillInterval } from '../../../plans/balance.js';

const strict = { additionalProperties: false } as const;

const Units = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

const Interval = Type.Unsafe<RefillInterval>({
  type: 'string',
  enum: [...REFILL_INTERVALS],
  description: '`day`: at 00:00 UTC every day; `month`: at 00:00 UTC on `dayOfMonth` every month',
});

export const Refill = Type.Object(
  {
    amount: {
      ...Units,
      description: 'What `remaining` is set to at each refill (it does not add up), 0 to 2^53-1',
    },
    interval: Interval,
    dayOfMonth: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 31,
        description:
          'Monthly refills only: the day of the month, 1-31 (default 1); in a shorter month, its last day',
      }),
    ),
  },
  { ...strict, title: 'CreditRefill' },
);

const LowAt = Type.Union([{ ...Units }, Type.Null()], {
  description:
    '`credits.low` fires when the balance falls below this many units; null: below a tenth of the refill amount (never without a refill)',
});

const Remaining = { ...Units, description: 'The balance, 0 to 2^53-1' };
const RefillInput = Type.Optional(
  Type.Union([Refill, Type.Null()], { description: 'Absent or null: the balance is never refilled' }),
);

export const CreditsInput = Type.Union(
  [
    Type.Object(
      { remaining: Remaining, refill: RefillInput, lowAt: Type.Optional(LowAt) },
      { ...strict, title: 'CreditsInput' },
    ),
    Type.Null(),
  ],
  {
    description:
      'Sets the balance: a new count from `remaining`, whatever was spent before, with this refill and `lowAt` (absent: none, default). null removes it: the holder is no longer charged credits',
  },
);

/** A PATCH's credits: as a create's, or without `remaining` to change only the refill and `lowAt`. */
export const CreditsUpdate = Type.Union(
  [
    Type.Object(
      {
        remaining: Type.Optional({
          ...Remaining,
          description:
            'The balance, 0 to 2^53-1, counted afresh. Absent: the balance the holder has goes on counting what was spent (before and while it changes), with this refill and `lowAt`; the new refill first comes at its next boundary. Required when the holder has no balance',
        }),
        refill: RefillInput,
        lowAt: Type.Optional(LowAt),
      },
      { ...strict, title: 'CreditsUpdate' },
    ),
    Type.Null(),
  ],
  {
    description:
      'With `remaining`: sets the balance, a new count whatever was spent before, with this refill and `lowAt` (absent: none, default). Without: changes only the refill and `lowAt` of the balance the holder has, its count going on. null removes it: the holder is no longer charged credits',
  },
);

export const Credits = Type.Object(
  {
    remaining: Type.Integer({
      minimum: -Number.MAX_SAFE_INTEGER,
      maximum: Number.MAX_SAFE_INTEGER,
      description:
        'Units it holds now, as the limiter counts them on every replica (while the limiter cannot be read: as last saved, at most a second behind); below 0 when requests priced by their response used more than they reserved',
    }),
    refill: Type.Union([Refill, Type.Null()]),
    lowAt: LowAt,
  },
  { ...strict, title: 'Credits' },
);

export const CreditsOrNull = Type.Union([Credits, Type.Null()], {
  description: 'The prepaid balance (docs/guides/credits.md); null: it holds none',
});

export type CreditsInput = Static<typeof CreditsInput>;
export type CreditsUpdate = Static<typeof CreditsUpdate>;
export type Credits = Static<typeof Credits>;
