/** Reports of leaked secrets (docs/guides/leaked-keys.md): what a scanner sends and is answered. */
import { Type, type Static } from '@sinclair/typebox';
import { NO_CONTROL_CHARACTER_PATTERN } from '../../../plans/clean-text.js';

export const MAX_REPORTED_SECRETS = 100;

export const LeakedKeysRequest = Type.Object(
  {
    secrets: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
      minItems: 1,
      maxItems: MAX_REPORTED_SECRETS,
      description: 'Secrets found where they should not be (never recorded: only their SHA-256 is)',
    }),
    source: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        pattern: NO_CONTROL_CHARACTER_PATTERN,
        description:
          'Who found them (a scanner, a URL…), without control characters; recorded in the audit entry and the key. Default `manual`',
      }),
    ),
  },
  { additionalProperties: false, title: 'LeakedKeysRequest' },
);
export type LeakedKeysRequest = Static<typeof LeakedKeysRequest>;

export const LeakLabel = Type.Unsafe<'true_positive' | 'false_positive'>({
  type: 'string',
  enum: ['true_positive', 'false_positive'],
  description:
    '`true_positive`: the secret would authenticate now (its key enabled and unexpired, the current secret or a rolled one in its grace), and LEAKED_KEY_ACTION was applied; else `false_positive`',
});

export const LeakAnswer = Type.Array(
  Type.Object(
    {
      token_hash: Type.String({ description: 'Lowercase hex SHA-256 of the secret reported' }),
      token_type: Type.String({
        description: "The report's `type` (GitHub's); `keys/leaked` answers `tollgate_api_key`",
      }),
      label: LeakLabel,
    },
    { additionalProperties: false },
  ),
  { title: 'LeakAnswer', description: 'One item per secret reported, in the order reported' },
);
export type LeakAnswer = Static<typeof LeakAnswer>;

/** A key's latest leak report, as the key detail and the portal show it. */
export const KeyLeakSchema = Type.Union(
  [
    Type.Object(
      {
        at: Type.String({ description: 'When it was reported, ISO 8601 UTC' }),
        source: Type.String({ description: '`github`, or the `source` a `keys/leaked` caller gave' }),
        url: Type.Union([Type.String(), Type.Null()], { description: 'Where it was found; null: not said' }),
        action: Type.Unsafe<'disable' | 'roll' | 'notify'>({
          type: 'string',
          enum: ['disable', 'roll', 'notify'],
          description:
            'What LEAKED_KEY_ACTION did: disabled the key, gave it a new secret, or only this notice',
        }),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  { description: 'Its secret was reported leaked (the latest report); null: never' },
);
