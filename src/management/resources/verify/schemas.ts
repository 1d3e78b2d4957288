/** The request and answer of `POST /tollgate/verify` (docs/guides/verify-and-client.md). */
import { isIP } from 'node:net';
import { Type, type Static } from '@sinclair/typebox';
import { CUSTOMER_ID_PATTERN, MAX_CUSTOMER_ID_LENGTH } from '../../../plans/customer-id.js';
import { MAX_COST, MIN_COST } from '../../../plans/plan.js';
import { MAX_SETTLE_UNITS, SETTLE_MAX_DEFAULT } from '../../../plans/usage-pricing.js';
import { AlgorithmSchema, limitStateFields } from '../plans/schemas.js';
import {
  ConsumerId,
  ExternalId,
  IsoTimestamp,
  KeyId,
  Metadata,
  strict,
  type ValidationDetail,
} from '../../schemas.js';

/** What verify answers: `ok`, or the code of the refusal the proxy would answer the request with. */
export const VERIFY_CODES = [
  'ok',
  'invalid_api_key',
  'key_disabled',
  'key_expired',
  'token_expired',
  'rate_limit_exceeded',
  'concurrency_limit_exceeded',
  'credits_exhausted',
  'route_not_allowed',
  'origin_not_allowed',
  'address_not_allowed',
  'too_many_failed_attempts',
  'route_not_found',
  'invalid_request_target',
] as const;
export type VerifyCode = (typeof VERIFY_CODES)[number];

/** As long as Node lets a request line or a header be (16 KiB in all). */
const MAX_REQUEST_TEXT = 8192;

export const VerifyRequest = Type.Object(
  {
    key: Type.String({
      maxLength: MAX_REQUEST_TEXT,
      description:
        'The secret the client presented (`Authorization: Bearer <secret>` or `x-api-key`), or a short-lived token of a key (`tgt_…`, docs/guides/browser.md), decided as the proxy decides it. Anything that is not a key or a valid token, the empty string included, is `invalid_api_key`',
    }),
    path: Type.Optional(
      Type.String({
        maxLength: MAX_REQUEST_TEXT,
        pattern: '^/[^?#\\u0000-\\u0020\\u007f]*$',
        description:
          'The request path as sent, without the query, put in normal form as the proxy puts it (`/v1/%73earch` is `/v1/search`; docs/guides/routes.md): the route the proxy would take, the limits and costs that match it, and the endpoint usage files the request under. Absent: usage files it under `(verify)`, and it takes no route (decided as the catch-all, also when `UPSTREAM_URL` is empty): limits and costs whose match names routes or a path prefix other than `/` do not apply, and a key limited to some routes is refused `route_not_allowed`. A path with a `.` or `..` segment is answered `invalid_request_target`, as the proxy answers it (400, nothing counted)',
        examples: ['/v1/reports'],
      }),
    ),
    method: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z][A-Za-z-]{0,31}$',
        description:
          'The request method, taken in upper case. Absent: only routes, limits and costs that take every method apply',
        examples: ['POST'],
      }),
    ),
    host: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 300,
        pattern: '^[^\\u0000-\\u0020\\u007f]+$',
        description:
          "The request's Host header, for routes that match a host. Absent: only routes for every host match, as for a request without a Host header",
        examples: ['api.example.com'],
      }),
    ),
    cost: Type.Optional(
      Type.Integer({
        minimum: MIN_COST,
        maximum: MAX_COST,
        description: `Units to charge (${MIN_COST}-${MAX_COST}) instead of the cost the key's plans give the request`,
      }),
    ),
    reserve: Type.Optional(
      Type.Integer({
        minimum: MIN_COST,
        maximum: MAX_SETTLE_UNITS,
        description: `Units to reserve (${MIN_COST}-${MAX_SETTLE_UNITS}, capped at the matching cost entry's \`settleMax\`, default ${SETTLE_MAX_DEFAULT}) instead of the cost the key's plans give the request, for a request whose cost is known only after it is served (docs/guides/usage-priced-apis.md): charged now like a cost, and settled by \`POST /tollgate/verify/settle\` with the \`reservationId\` of the answer. Not with \`cost\``,
      }),
    ),
    body: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description:
            'The request\'s JSON body (an object) as your server parsed it, or the fields of it your plans read (e.g. `{"model": "gpt-4o", "max_tokens": 800}`), for limits and costs that match on it (`match.body`) or reserve from it (`reserve`), as the proxy reads its own request\'s body. Absent: such a limit or cost matches nothing and a `reserve` takes its `default`',
          examples: [{ model: 'gpt-4o', max_tokens: 800 }],
        },
      ),
    ),
    customerId: Type.Optional(
      Type.String({
        maxLength: MAX_REQUEST_TEXT,
        pattern: CUSTOMER_ID_PATTERN,
        description: `The CUSTOMER_ID_HEADER value the request carried: usage by customer counts it, cut at ${MAX_CUSTOMER_ID_LENGTH} code points. Empty: none, as the proxy reads an empty header. A control character (U+0000 to U+001F, U+007F) is 400 \`validation_failed\`, as the proxy answers such a header 400 \`invalid_customer_id\``,
      }),
    ),
    clientAddress: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          "The end client's IPv4 or IPv6 address, as the proxy would see it: wrong keys are throttled per this address, sharing the proxy's budget (100 a minute), one budget however the address is written (IPv6 as RFC 5952 writes it, an IPv4-mapped IPv6 address as its IPv4 address). Absent: no address throttle, and a key with `allowedAddresses` is refused `address_not_allowed`. Never the caller's own address",
        examples: ['203.0.113.7'],
      }),
    ),
    origin: Type.Optional(
      Type.String({
        maxLength: 300,
        description:
          "The request's `Origin` (or its `Referer`'s origin), for a key with `allowedOrigins` (docs/guides/browser.md). Absent: a key with `allowedOrigins` is refused `origin_not_allowed`",
        examples: ['https://app.example.com'],
      }),
    ),
  },
  { ...strict, title: 'VerifyRequest' },
);
export type VerifyRequest = Static<typeof VerifyRequest>;

/** Problems the schema cannot state: an address that is none, a cost beside a reservation. */
export function verifyRequestProblems(body: VerifyRequest): ValidationDetail[] {
  const problems: ValidationDetail[] = [];
  if (body.clientAddress !== undefined && isIP(body.clientAddress) === 0)
    problems.push({ field: 'clientAddress', message: 'must be an IPv4 or IPv6 address' });
  if (body.cost !== undefined && body.reserve !== undefined)
    problems.push({ field: 'reserve', message: 'is a cost settled later: not with cost' });
  return problems;
}

const Scope = Type.Unsafe<'key' | 'consumer'>({ type: 'string', enum: ['key', 'consumer'] });
const RetryTime = Type.Union([IsoTimestamp, Type.Null()]);

export const VerifyResponse = Type.Object(
  {
    valid: Type.Boolean({ description: 'The proxy would forward the request: it was counted and charged' }),
    code: Type.Unsafe<VerifyCode>({
      type: 'string',
      enum: [...VERIFY_CODES],
      description:
        '`ok`, or the code of the refusal the proxy would answer (its status: 401 invalid_api_key, key_expired and token_expired; 403 key_disabled, route_not_allowed, origin_not_allowed and address_not_allowed; 404 route_not_found when no route takes `path` and UPSTREAM_URL is empty; 400 invalid_request_target for a path with a dot segment; 429 rate_limit_exceeded, concurrency_limit_exceeded, credits_exhausted and too_many_failed_attempts)',
    }),
    consumerApiKeyId: Type.Optional({ ...KeyId, description: 'Present whenever the key is valid' }),
    consumerId: Type.Optional(
      Type.Union([ConsumerId, Type.Null()], { description: 'The consumer the key belongs to; null: none' }),
    ),
    name: Type.Optional(Type.String({ description: "The key's name" })),
    externalId: Type.Optional(Type.Union([ExternalId, Type.Null()])),
    metadata: Type.Optional(Metadata),
    limits: Type.Array(
      Type.Object(
        { ...limitStateFields, algorithm: AlgorithmSchema },
        {
          ...strict,
          title: 'VerifyLimit',
          description:
            "A limit as the key detail's `usage.rateLimits.limits` shows it, after the decision, with its `algorithm` (it sets the window a monthly or yearly limit announces in `RateLimit-Policy`)",
        },
      ),
      {
        description:
          "The limits the request was decided by, the key's in its plan's order then its consumer's (the order of `RateLimit-Policy`); those with a match only when the request matches them. Empty when none applies, or when it was refused before its limits (an invalid, disabled or expired key, a route refused)",
      },
    ),
    cost: Type.Optional(
      Type.Integer({
        minimum: MIN_COST,
        maximum: MAX_SETTLE_UNITS,
        description:
          'The units charged to every limit and balance (admitted; reserved, when it is to be settled), or that the balance does not hold (credits_exhausted)',
      }),
    ),
    reservationId: Type.Optional(
      Type.String({
        description:
          'Admitted with `reserve`, or by a cost entry that settles (`settle`): the reservation `POST /tollgate/verify/settle` settles, once, within RESERVATION_TTL_SECONDS (default 900). Its usage is counted when it is settled, at the settled units; one never settled keeps its reservation as its cost',
        examples: ['rsv_3q2-7wEwZ1x0bY6lTQh8Aw'],
      }),
    ),
    credits: Type.Optional(
      Type.Object(
        {
          remaining: Type.Integer({
            minimum: -Number.MAX_SAFE_INTEGER,
            maximum: Number.MAX_SAFE_INTEGER,
            description:
              'Units the balance holds; below 0 when requests priced by their response used more than they reserved',
          }),
          scope: { ...Scope, description: "Whose balance: the key's own, or its consumer's" },
          resetTime: { ...RetryTime, description: 'Its next refill; null: it has no refill' },
        },
        {
          ...strict,
          title: 'VerifyCredits',
          description:
            'Admitted: the balance with the fewest units left after the charge; credits_exhausted: the balance that does not hold the cost (the 429 body of the proxy). Absent when no balance applies',
        },
      ),
    ),
    resetTime: Type.Optional({
      ...RetryTime,
      description:
        "A refusal that passes: rate_limit_exceeded, the end of the refusing limit whose window ends last (a token bucket: when it holds the cost); concurrency_limit_exceeded, a second on; credits_exhausted, the next refill (null: none); too_many_failed_attempts, the end of the address's window",
    }),
    retryAfterSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: "The proxy's `Retry-After`: whole seconds until `resetTime`, at least 1",
      }),
    ),
  },
  { ...strict, title: 'VerifyResponse' },
);
export type VerifyResponse = Static<typeof VerifyResponse>;

export const VerifySettleRequest = Type.Object(
  {
    reservationId: Type.String({
      minLength: 1,
      maxLength: 64,
      description: "The `reservationId` of a verify answer, or a gateway's `x-tollgate-reservation` header",
    }),
    units: Type.Integer({
      minimum: 0,
      maximum: MAX_SETTLE_UNITS,
      description:
        "The units the request used, capped at its cost entry's `settleMax`: `units − reserved` is charged to every limit and balance the reservation was charged to (a refund when negative), never refused. Ignored for a gateway's reservation that holds only a concurrency place",
    }),
  },
  { ...strict, title: 'VerifySettleRequest' },
);
export type VerifySettleRequest = Static<typeof VerifySettleRequest>;

export const VerifySettleResponse = Type.Object(
  {
    reservationId: Type.String(),
    units: Type.Integer({ minimum: 0, description: "The request's cost now: the units settled (capped)" }),
    charged: Type.Integer({
      description: 'Units charged by the settlement: `units − reserved`, negative for a refund',
    }),
  },
  { ...strict, title: 'VerifySettleResponse' },
);
export type VerifySettleResponse = Static<typeof VerifySettleResponse>;
