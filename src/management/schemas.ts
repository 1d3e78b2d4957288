/**
 * What every management resource shares: the error envelope, the ids, names, timestamps, metadata
 * and pagination. Each resource's own requests and answers are in resources/<resource>/schemas.ts;
 * the TypeBox schemas there are the source of the ajv validators, of the TypeScript types and of the
 * OpenAPI document, so the three cannot drift apart.
 */
import { type Static, Type } from '@sinclair/typebox';
import { RATE_LIMIT_ID_PATTERN } from './request-match-schemas.js';

// Postgres text cannot hold U+0000; refusing it here keeps such input a 400 instead of a database error.
export const NO_NUL = '^[^\\u0000]*$';

export const ISO_TIMESTAMP_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$';
export const CREATE_TIMESTAMP_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$';

export const MAX_NAME_LENGTH = 200;
export const MAX_DESCRIPTION_LENGTH = 1000;
export const MAX_KEY_ID_LENGTH = 128;
export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_PAGE_SIZE = 100;

export const IsoTimestamp = Type.String({
  format: 'date-time',
  pattern: ISO_TIMESTAMP_PATTERN,
  description: 'UTC, whole seconds: YYYY-MM-DDThh:mm:ssZ',
  examples: ['2026-11-21T14:23:02Z'],
});

export const Count = Type.Integer({ minimum: 0 });
export const strict = { additionalProperties: false } as const;
/** A timestamp a caller sends: the same shape, checked for a real date by the route (see `parseTimestamp`). */
export const IsoTimestampInput = Type.String({
  pattern: ISO_TIMESTAMP_PATTERN,
  description: 'UTC, whole seconds: YYYY-MM-DDThh:mm:ssZ',
});
export const MAX_METADATA_BYTES = 8 * 1024;
/** Objects and arrays in metadata nest at most this deep: deeper is no owner's record, only a way to exhaust a stack. */
export const MAX_METADATA_DEPTH = 32;

export const Name = Type.String({
  minLength: 1,
  maxLength: MAX_NAME_LENGTH,
  pattern: NO_NUL,
  description: 'Free label, 1-200 characters (U+0000 excluded)',
});
// `*`, not `+`: minLength reports an empty value, so it is named once, not twice.
export const KEY_ID_PATTERN = '^[A-Za-z0-9._~:-]*$';
export const KeyId = Type.String({
  minLength: 1,
  maxLength: MAX_KEY_ID_LENGTH,
  pattern: KEY_ID_PATTERN,
  description: 'Identifier of a consumer API key, as returned by create (`id`)',
  examples: ['key_3q2xR0f1bW8mT5nYk9Lp4A'],
});
export const RateLimitId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: RATE_LIMIT_ID_PATTERN,
  description: 'Chosen by the caller: 1-128 characters of A-Z a-z 0-9 . _ : -',
  examples: ['gold-1000-per-hour'],
});
export const CONSUMER_ID_PATTERN = '^con_[A-Za-z0-9_-]{22}$';
export const ConsumerId = Type.String({
  pattern: CONSUMER_ID_PATTERN,
  description: 'Identifier of a consumer, as returned by its creation (`consumerId`)',
  examples: ['con_Yc2xR0f1bW8mT5nYk9Lp4A'],
});

export const ExternalId = Type.String({
  minLength: 1,
  maxLength: MAX_NAME_LENGTH,
  pattern: NO_NUL,
  description: "The owner's id in the caller's system, 1-200 characters",
});
export const Metadata = Type.Record(Type.String(), Type.Unknown(), {
  description: `A JSON object of at most ${MAX_METADATA_BYTES} bytes as serialised and ${MAX_METADATA_DEPTH} levels of nesting, returned as given`,
});

/** `metadata` as a caller sets it: null stands for `{}`. */
export const MetadataSetting = Type.Optional(
  Type.Union([Metadata, Type.Null()], { description: `${Metadata.description}; null: \`{}\`` }),
);

export const pageFields = {
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE_SIZE,
      default: DEFAULT_PAGE_SIZE,
      description: 'Page size, 1-1000',
    }),
  ),
  cursor: Type.Optional(Type.String({ description: 'The `nextCursor` of the previous page; opaque' })),
};

/** The `nextCursor` of every list. */
export const NextCursor = Type.Optional(
  Type.String({
    description: 'Present only when more keys remain: pass it as `cursor` for the next page',
  }),
);

export const ValidationDetail = Type.Object(
  {
    field: Type.String({
      description: 'The offending field: a dotted path, or "(body)" for the body as a whole',
    }),
    message: Type.String(),
  },
  strict,
);
export type ValidationDetail = Static<typeof ValidationDetail>;

export const ErrorResponse = Type.Object(
  {
    error: Type.String({ description: 'Human-readable message' }),
    code: Type.String({ pattern: '^[a-z][a-z0-9_]*$', description: 'Stable snake_case code' }),
    details: Type.Optional(
      Type.Array(ValidationDetail, { description: 'validation_failed only: each offending field' }),
    ),
    keyCount: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'rate_limit_in_use: keys bound to the plan; consumer_has_keys: keys the consumer holds',
      }),
    ),
    consumerCount: Type.Optional(
      Type.Integer({ minimum: 0, description: 'rate_limit_in_use only: consumers bound to the plan' }),
    ),
  },
  { ...strict, title: 'Error' },
);
