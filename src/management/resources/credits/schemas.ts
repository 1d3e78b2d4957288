/** `POST /tollgate/credits`: a top-up or a set of a key's or consumer's balance (docs/guides/credits.md). */
import { Type, type Static } from '@sinclair/typebox';
import { ConsumerId, KeyId, strict, type ValidationDetail } from '../../schemas.js';

const Remaining = Type.Integer({
  minimum: -Number.MAX_SAFE_INTEGER,
  maximum: Number.MAX_SAFE_INTEGER,
  description:
    'Units the balance holds now, after the change: below 0 when requests priced by their response used more than they reserved and a top-up did not cover it',
});

export const CreditsChangeRequest = Type.Object(
  {
    consumerApiKeyId: Type.Optional({ ...KeyId, description: 'The key whose own balance changes' }),
    consumerId: Type.Optional({ ...ConsumerId, description: 'The consumer whose balance changes' }),
    add: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          'Tops the balance up by this many units (it keeps its refill); a holder without a balance gets one of this many, with no refill',
      }),
    ),
    set: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          'Sets the balance to this many units, whatever was spent before (it keeps its refill and `lowAt`); a holder without a balance gets one, with no refill',
      }),
    ),
  },
  {
    ...strict,
    title: 'CreditsChangeRequest',
    description: 'One of `consumerApiKeyId` and `consumerId`, and one of `add` and `set`',
  },
);

export const CreditsChangeResponse = Type.Union(
  [
    Type.Object({ consumerApiKeyId: KeyId, remaining: Remaining }, { ...strict, title: 'KeyCredits' }),
    Type.Object({ consumerId: ConsumerId, remaining: Remaining }, { ...strict, title: 'ConsumerCredits' }),
  ],
  { description: 'The holder, by the id the request named, and what its balance holds now' },
);

export type CreditsChangeRequest = Static<typeof CreditsChangeRequest>;
export type CreditsChangeResponse = Static<typeof CreditsChangeResponse>;

/** Exactly one of each pair, whatever else is wrong with the body: named by field. */
export function creditsChangeShape(body: Readonly<Record<string, unknown>>): ValidationDetail[] {
  const details: ValidationDetail[] = [];
  for (const [first, second] of [
    ['consumerApiKeyId', 'consumerId'],
    ['add', 'set'],
  ] as const) {
    if (body[first] === undefined && body[second] === undefined)
      details.push({ field: first, message: `or ${second} is required` });
    else if (body[first] !== undefined && body[second] !== undefined)
      details.push({ field: second, message: `cannot come with ${first}` });
  }
  return details;
}
